export function main(world: string) {
  const greet = `Hello ${world}!`;
  console.log(greet);
  return greet
}
