/** Vite's `?raw` imports (a file's text), which the test projects use for committed fixtures. */
declare module "*?raw" {
  const text: string;
  export default text;
}
