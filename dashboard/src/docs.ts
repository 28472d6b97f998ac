/**
 * @module The API reference at /docs: reads /openapi.json from the same origin and draws it with the model of
 * docs-model.ts. Everything it needs is in this bundle, so the page works offline and asks no other host.
 */
import { html } from "htm/preact";
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { type DocsModel, docsModel, filterSections, METHOD_COLOURS, type OperationDoc, type ParameterDoc, type ResponseDoc } from "./docs-model.js";
import type { SchemaNode } from "./schema-tree.js";

/** Nested objects open up to this depth (an array's items count as their array); deeper ones start folded (a click or Enter opens them). */
const OPEN_DEPTH = 1;

function MethodBadge({ method }: { method: string }) {
  const colours = METHOD_COLOURS[method] ?? METHOD_COLOURS.HEAD!;
  return html`<span class="method" style=${{ color: colours.fg, background: colours.bg, borderColor: colours.fg }}>${method}</span>`;
}

/** One schema row: name, type, required, constraints, enum and description. */
function SchemaRow({ node }: { node: SchemaNode }) {
  return html`<span class="row">
    ${node.name === undefined ? null : html`<code class="prop">${node.name}</code>`}
    <span class="type">${node.type}${node.nullable ? " or null" : ""}</span>
    ${node.required ? html`<span class="badge required">required</span>` : null}
    ${node.recursive === true ? html`<span class="badge">recursive</span>` : null}
    ${node.constraints.map((c) => html`<span class="constraint">${c}</span>`)}
    ${node.enumValues === undefined ? null : html`<span class="enum">one of: ${node.enumValues.map((v, i) => html`${i > 0 ? ", " : ""}<code>${v}</code>`)}</span>`}
    ${node.description === undefined ? null : html`<span class="description">${node.description}</span>`}
  </span>`;
}

/** The children of a node: its properties, its items, its additional properties and its alternatives. */
function childrenOf(node: SchemaNode, depth: number) {
  const parts = [];
  if (node.properties.length > 0) parts.push(html`<ul class="schema">${node.properties.map((p) => html`<li><${SchemaTree} node=${p} depth=${depth + 1} /></li>`)}</ul>`);
  // An array of scalars says all in its row ("array of string"); only items with a structure get their own line.
  if (node.items !== undefined && hasChildren(node.items)) parts.push(html`<ul class="schema"><li><span class="label">each item</span><${SchemaTree} node=${node.items} depth=${depth} /></li></ul>`);
  else if (node.items !== undefined && (node.items.constraints.length > 0 || node.items.enumValues !== undefined)) {
    parts.push(html`<ul class="schema"><li><span class="label">each item</span><${SchemaRow} node=${node.items} /></li></ul>`);
  }
  if (node.additional !== undefined) parts.push(html`<ul class="schema"><li><span class="label">any other key</span><${SchemaTree} node=${node.additional} depth=${depth + 1} /></li></ul>`);
  if (node.variants !== undefined) {
    parts.push(html`<ul class="schema variants" aria-label=${node.variantKind === "oneOf" ? "Exactly one of" : "Any of"}>
      ${node.variants.map((v) => html`<li><span class="label">${node.variantKind === "oneOf" ? "exactly one of" : "any of"}: ${v.label}</span><${SchemaTree} node=${v.node} depth=${depth + 1} /></li>`)}
    </ul>`);
  }
  return parts;
}

function hasChildren(node: SchemaNode): boolean {
  return node.properties.length > 0 || node.additional !== undefined || node.variants !== undefined || (node.items !== undefined && (hasChildren(node.items) || node.items.constraints.length > 0 || node.items.enumValues !== undefined));
}

/** A schema as a tree: a row, and its children folded into a native disclosure (keyboard operable as is). */
function SchemaTree({ node, depth = 0 }: { node: SchemaNode; depth?: number }) {
  if (!hasChildren(node)) return html`<div class="leaf"><${SchemaRow} node=${node} /></div>`;
  return html`<details class="node" open=${depth <= OPEN_DEPTH}>
    <summary><${SchemaRow} node=${node} /></summary>
    ${childrenOf(node, depth)}
  </details>`;
}

function Parameters({ parameters }: { parameters: readonly ParameterDoc[] }) {
  if (parameters.length === 0) return null;
  return html`<h4>Parameters</h4>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Notes</th></tr></thead>
      <tbody>${parameters.map(
        (p) => html`<tr>
          <th scope="row"><code>${p.name}</code>${p.required ? html` <span class="badge required">required</span>` : null}</th>
          <td>${p.in}</td>
          <td>${p.schema.type}${p.schema.nullable ? " or null" : ""}</td>
          <td>
            ${p.schema.enumValues === undefined ? null : html`<span class="enum">one of: ${p.schema.enumValues.map((v, i) => html`${i > 0 ? ", " : ""}<code>${v}</code>`)}</span> `}
            ${p.schema.constraints.map((c) => html`<span class="constraint">${c}</span> `)}
            ${p.description ?? p.schema.description ?? ""}
          </td>
        </tr>`,
      )}</tbody>
    </table></div>`;
}

function Contents({ contents }: { contents: readonly { mediaType: string; schema?: SchemaNode }[] }) {
  return contents.map(
    (c) => html`<div class="content">
      <div class="media"><code>${c.mediaType}</code></div>
      ${c.schema === undefined ? null : html`<${SchemaTree} node=${c.schema} />`}
    </div>`,
  );
}

function Responses({ responses }: { responses: readonly ResponseDoc[] }) {
  if (responses.length === 0) return null;
  return html`<h4>Responses</h4>
    <ul class="responses">
      ${responses.map((r) => html`<li><span class="status"><code>${r.status}</code></span> ${r.description}<${Contents} contents=${r.contents} /></li>`)}
    </ul>`;
}

function Operation({ op }: { op: OperationDoc }) {
  const titleId = `${op.anchor}-title`;
  return html`<article class="op" id=${op.anchor} aria-labelledby=${titleId} tabindex="-1">
    <h3 id=${titleId}>
      <${MethodBadge} method=${op.method} />
      <code class="path">${op.path}</code>
      <a class="anchor" href=${`#${op.anchor}`} aria-label=${`Link to ${op.method} ${op.path}`}>#</a>
    </h3>
    ${op.summary === "" ? null : html`<p class="summary">${op.summary}</p>`}
    <dl class="meta">
      ${op.tool === undefined ? null : html`<div><dt>Tool</dt><dd><code>${op.tool}</code></dd></div>`}
      ${op.roles.length === 0 ? null : html`<div><dt>Roles</dt><dd>${op.roles.map((r) => html`<span class="role">${r}</span> `)}</dd></div>`}
      <div><dt>Token</dt><dd>${op.authenticated ? "Authorization: Bearer <token>" : "none"}</dd></div>
      ${op.operationId === undefined ? null : html`<div><dt>operationId</dt><dd><code>${op.operationId}</code></dd></div>`}
    </dl>
    ${op.notes === "" ? null : html`<p class="description">${op.notes}</p>`}
    <${Parameters} parameters=${op.parameters} />
    ${op.body === undefined ? null : html`<h4>Request body${op.body.required ? html` <span class="badge required">required</span>` : null}</h4><${Contents} contents=${op.body.contents} />`}
    <${Responses} responses=${op.responses} />
  </article>`;
}

function Reference({ model }: { model: DocsModel }) {
  const [query, setQuery] = useState("");
  const sections = useMemo(() => filterSections(model.sections, query), [model, query]);
  const shown = sections.reduce((n, s) => n + s.operations.length, 0);
  // The page is drawn after the document arrives: go to the operation the address names, as a static page would.
  useEffect(() => {
    const target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    target?.scrollIntoView();
    target?.focus({ preventScroll: true });
  }, []);
  return html`
    <a class="skip" href="#main">Skip to the reference</a>
    <header class="top">
      <h1>${model.title} API <span class="version">${model.version}</span></h1>
      <a href="/openapi.json">openapi.json</a>
      <a href="/">Dashboard</a>
    </header>
    <div class="layout">
      <nav aria-label="Operations">
        <label for="filter">Filter operations</label>
        <input id="filter" type="search" value=${query} placeholder="path, tool, role…" onInput=${(e: Event) => setQuery((e.currentTarget as HTMLInputElement).value)} />
        <p class="count" role="status">${shown === model.operationCount ? `${shown} operations` : `${shown} of ${model.operationCount} operations`}</p>
        <ul class="toc">
          ${sections.map(
            (s) => html`<li>
              <a class="section-link" href=${`#${s.id}`}>${s.title}</a>
              <ul>${s.operations.map((op) => html`<li><a href=${`#${op.anchor}`}><span class="toc-method">${op.method}</span><span class="toc-name">${op.tool ?? op.path}</span></a></li>`)}</ul>
            </li>`,
          )}
        </ul>
      </nav>
      <main id="main" tabindex="-1">
        ${model.description === "" ? null : html`<p class="intro">${model.description}</p>`}
        ${model.servers.length === 0 ? null : html`<p class="intro">Base URL: ${model.servers.map((s) => html`<code>${s}</code> `)}</p>`}
        ${shown === 0 ? html`<p>No operation matches “${query}”.</p>` : null}
        ${sections.map(
          (s) => html`<section aria-labelledby=${s.id}>
            <h2 id=${s.id} tabindex="-1">${s.title}</h2>
            ${s.operations.map((op) => html`<${Operation} key=${op.anchor} op=${op} />`)}
          </section>`,
        )}
      </main>
    </div>`;
}

async function main(): Promise<void> {
  const root = document.getElementById("docs")!;
  try {
    const res = await fetch("/openapi.json", { headers: { accept: "application/json" } });
    if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
    const model = docsModel(await res.json());
    root.textContent = "";
    render(html`<${Reference} model=${model} />`, root);
  } catch (e) {
    root.textContent = "";
    render(html`<main id="main"><h1>API reference</h1><p role="alert">The API description could not be loaded: ${e instanceof Error ? e.message : String(e)}. It is at <a href="/openapi.json">/openapi.json</a>.</p></main>`, root);
  }
}

void main();
