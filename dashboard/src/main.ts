/** @module The dashboard's entry: take the viewer's token, then render the app into #app. */
import { html } from "htm/preact";
import { render } from "preact";
import { clientFor } from "./api.js";
import { takeViewer } from "./auth.js";
import { App, NoToken } from "./views/app.js";

const viewer = takeViewer(location, sessionStorage, history);
const root = document.getElementById("app")!;
root.textContent = "";
render(viewer === null ? html`<${NoToken} />` : html`<${App} viewer=${viewer} client=${clientFor(viewer)} />`, root);
