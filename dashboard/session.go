package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/access"
)

// sessions are the signed-in visitors, held in memory: a session is a
// random id (128 bits from crypto/rand) kept in the visitor's cookie,
// mapped here to the token the visitor signed in with (its name, scope
// and namespace; not its secret) until it expires ([sessionLifetime])
// or the visitor signs out. A restart of the server signs everyone out.
// At most max sessions are held; beyond, the one nearest its end is
// dropped. Ids are stored by their SHA-256, so a lookup's timing says
// nothing of the ids held.
type sessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]session
	max int
	now func() time.Time
}

type session struct {
	tok     access.Token // Secret cleared
	expires time.Time
}

func newSessions(max int) *sessions {
	return &sessions{m: map[[sha256.Size]byte]session{}, max: max, now: time.Now}
}

// create starts a session for tok and returns its id.
func (s *sessions) create(tok access.Token) string {
	id := rand.Text()
	tok.Secret = ""
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		var oldest [sha256.Size]byte
		var oldestAt time.Time
		for k, v := range s.m {
			if !v.expires.After(now) {
				delete(s.m, k)
				continue
			}
			if oldestAt.IsZero() || v.expires.Before(oldestAt) {
				oldest, oldestAt = k, v.expires
			}
		}
		if len(s.m) >= s.max {
			delete(s.m, oldest)
		}
	}
	s.m[sha256.Sum256([]byte(id))] = session{tok: tok, expires: now.Add(sessionLifetime)}
	return id
}

// get returns the token of session id, if it is held and not expired.
func (s *sessions) get(id string) (access.Token, bool) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return access.Token{}, false
	}
	if !v.expires.After(s.now()) {
		delete(s.m, key)
		return access.Token{}, false
	}
	return v.tok, true
}

// revoke ends session id.
func (s *sessions) revoke(id string) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}
