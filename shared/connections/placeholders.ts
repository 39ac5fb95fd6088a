/**
 * A form value that still holds a documentation placeholder (`rk_test_<your restricted key>`):
 * the user copied an example. Saying so beats saying the format is wrong, since the value often
 * starts right.
 */
export function placeholderProblem(value: string, what: string): string | undefined {
  if (!/[<>]/.test(value)) return undefined;
  return `The ${what} still holds a placeholder (the part in <…>): replace it, angle brackets included, with the ${what} copied from the platform.`;
}
