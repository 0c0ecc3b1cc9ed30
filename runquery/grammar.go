package runquery

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar, in participle's struct tags (the parser library the issue
// chose; it reports every syntax error with its line and column):
//
//	query     = or
//	or        = and { "OR" and }
//	and       = unary { "AND" unary }
//	unary     = "NOT" unary | "(" or ")" | predicate
//	predicate = field ( op value
//	                  | "IS" [ "NOT" ] "NULL"
//	                  | [ "NOT" ] ( "IN" "(" value { "," value } ")" | "STARTS_WITH" value ) )
//	field     = ident [ "." ident ]
//	value     = string | number | "TRUE" | "FALSE"
//
// Keywords are case-insensitive; field names are not.

var queryLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "whitespace", Pattern: `[ \t\r\n]+`},
	{Name: "String", Pattern: `"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'`},
	{Name: "Number", Pattern: `[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`},
	{Name: "Keyword", Pattern: `(?i)(?:AND|OR|NOT|IN|IS|NULL|TRUE|FALSE|STARTS_WITH)\b`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Op", Pattern: `==|!=|<>|<=|>=|=|<|>`},
	{Name: "Punct", Pattern: `[(),.]`},
})

var queryParser = participle.MustBuild[orNode](
	participle.Lexer(queryLexer),
	participle.Elide("whitespace"),
	participle.CaseInsensitive("Keyword"),
	participle.UseLookahead(2),
)

type orNode struct {
	Terms []*andNode `parser:"@@ ( \"OR\" @@ )*"`
}

type andNode struct {
	Factors []*unaryNode `parser:"@@ ( \"AND\" @@ )*"`
}

type unaryNode struct {
	Pos   lexer.Position
	Not   *unaryNode     `parser:"  \"NOT\" @@"`
	Group *orNode        `parser:"| \"(\" @@ \")\""`
	Pred  *predicateNode `parser:"| @@"`
}

type predicateNode struct {
	Pos    lexer.Position
	Field  *fieldNode  `parser:"@@"`
	Cmp    *cmpNode    `parser:"( @@"`
	IsNull *isNullNode `parser:"| @@"`
	Set    *setNode    `parser:"| @@ )"`
}

type fieldNode struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
	Sub  string `parser:"( \".\" @Ident )?"`
}

type cmpNode struct {
	Pos   lexer.Position
	Op    string     `parser:"@Op"`
	Value *valueNode `parser:"@@"`
}

type isNullNode struct {
	Pos lexer.Position
	Not bool `parser:"\"IS\" @\"NOT\"? \"NULL\""`
}

type setNode struct {
	Pos    lexer.Position
	Not    bool         `parser:"@\"NOT\"?"`
	In     []*valueNode `parser:"( \"IN\" \"(\" @@ ( \",\" @@ )* \")\""`
	Starts *valueNode   `parser:"| \"STARTS_WITH\" @@ )"`
}

type valueNode struct {
	Pos    lexer.Position
	String *string `parser:"  @String"`
	Number *string `parser:"| @Number"`
	Bool   *string `parser:"| @( \"TRUE\" | \"FALSE\" )"`
}
