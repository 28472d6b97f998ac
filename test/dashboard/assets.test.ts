/** The dashboard's static files as shipped: the stylesheet parses whole, and the page names only files the build makes. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** Blocks still open at the end of a stylesheet (comments and strings skipped); 0 when every `{` is closed. */
function openBlocks(css: string): { open: number; unmatchedAt: number | null } {
  const text = css.replace(/\/\*[\s\S]*?\*\//g, "").replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "{") depth += 1;
    else if (text[i] === "}" && --depth < 0) return { open: depth, unmatchedAt: i };
  }
  return { open: depth, unmatchedAt: null };
}

describe("the dashboard's static files", () => {
  it("Should close every block of the stylesheets (an unclosed @media swallows every rule after it)", () => {
    for (const file of ["dashboard/theme.css", "dashboard/app.css"]) expect(openBlocks(readFileSync(file, "utf8")), file).toEqual({ open: 0, unmatchedAt: null });
  });

  it("Should tell an unclosed block from a closed one", () => {
    expect(openBlocks("@media (x) { a { b: c; }\n/* } */ d { e: f; }").open).toBe(1);
    expect(openBlocks('a { content: "}"; }').open).toBe(0);
  });

  it("Should reference from index.html and docs.html only files the build writes", () => {
    for (const [page, files] of [["dashboard/index.html", ["/theme.css", "/app.css", "/app.js", "/favicon.svg"]], ["dashboard/docs.html", ["/theme.css", "/docs.js"]]] as const) {
      const html = readFileSync(page, "utf8");
      const refs = [...html.matchAll(/(?:src|href)="(\/[^"#?]*)"/g)].map((m) => m[1]).filter((r) => r !== "/" && r !== "/docs" && r !== "/openapi.json");
      expect(refs.filter((r) => !(files as readonly string[]).includes(r!)), page).toEqual([]);
    }
  });
});
