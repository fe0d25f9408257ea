// cgraph studio: chat with a graph on the left, watch it move on the right.
// The chat goes through cgraph serve's API (/v1/sessions...); /studio/api/... gives what
// only this page needs (the picture, a turn's reasons, reload, save as test).
"use strict";

const S = {
  graphs: [],
  graph: null, // the studied file shown: {file, name, version, lint, diagnostics, changed}
  session: null,
  turn: 0, // the latest turn shown
  completed: false,
  busy: false,
  opened: new Set(), // graph states drawn open (as clusters)
  replay: {}, // turn number → how the replayed turn differs from before the edit
  variables: {},
  focus: null,
  view: null, // the picture's viewBox: {full, box}
  watching: true,
};
const $ = (id) => document.getElementById(id);
const WATCH_MS = 1500;

// ----- talking to the server --------------------------------------------------------------

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new Error("the studio server does not answer (is `cgraph studio` still running?)");
  }
  return answered(response);
}

async function answered(response) {
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const said = data && data.error ? data.error.message : `${response.status} ${response.statusText}`;
    throw new Error(said);
  }
  return data;
}

function say(text, kind = "info") {
  $("message").hidden = false;
  $("message").className = `notice ${kind}`;
  $("message-text").textContent = text;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// ----- graphs -----------------------------------------------------------------------------

async function loadGraphs() {
  const data = await api("GET", "/studio/api/graphs");
  S.graphs = data.graphs;
  const choice = $("graph-choice");
  choice.replaceChildren(...S.graphs.map((g) => {
    const option = el("option", "", g.name || g.file);
    option.value = g.file;
    return option;
  }));
  choice.hidden = S.graphs.length < 2;
  $("graph-name").hidden = !choice.hidden;
}

async function useGraph(file, sessionId) {
  S.graph = S.graphs.find((g) => g.file === file) || S.graphs[0];
  $("graph-choice").value = S.graph.file;
  S.opened.clear();
  S.replay = {};
  showGraph();
  if (!S.graph.name) {
    $("graph").replaceChildren(el("p", "muted center", "The graph has errors: fix them in the file, then reload."));
    clearChat();
    $("messages").querySelector("li.empty").textContent = "The chat starts once the graph loads without errors.";
    setEnabled();
    return;
  }
  await drawGraph();
  if (sessionId) {
    try {
      await openSession(sessionId);
      return;
    } catch (error) {
      await newSession();
      say(`Session ${sessionId} could not be opened (${error.message}); this is a new one.`, "info");
      return;
    }
  }
  await newSession();
}

function showGraph() {
  const g = S.graph;
  $("graph-name").textContent = g.name || "(not loaded)";
  $("graph-file").textContent = g.file;
  const badge = $("lint-badge");
  const count = g.diagnostics.length;
  badge.textContent = g.lint === "clean" ? "lint clean" : `${count} lint ${g.lint === "errors" ? "problem" : "warning"}${count === 1 ? "" : "s"}`;
  badge.className = `badge ${g.lint}`;
  $("changed").hidden = !g.changed;
  $("changed-file").textContent = g.file;
  showDiagnostics(g);
}

function showDiagnostics(g) {
  const box = $("diagnostics");
  const errors = g.diagnostics.filter((d) => d.severity === "error");
  box.hidden = errors.length === 0;
  if (box.hidden) return;
  const running = g.name ? ` The last good version of ${g.name} keeps running.` : "";
  $("diagnostics-head").textContent = `${g.file} has ${errors.length} error${errors.length === 1 ? "" : "s"}: fix ${errors.length === 1 ? "it" : "them"} and reload.${running}`;
  $("diagnostics-list").replaceChildren(...g.diagnostics.map((d) => {
    const item = el("li", `diagnostic ${d.severity}`);
    item.append(el("code", "where", `${d.file}:${d.line}:${d.column}`), " ",
      el("span", "severity", d.severity), " ", el("code", "code", d.code), " ",
      el("span", "text", d.message));
    if (d.hint) item.append(el("div", "hint", `hint: ${d.hint}`));
    return item;
  }));
}

async function watch() {
  if (!S.watching || !S.graph) return;
  try {
    const data = await api("GET", "/studio/api/graphs");
    S.graphs = data.graphs;
    const now = S.graphs.find((g) => g.file === S.graph.file);
    if (now) $("changed").hidden = !now.changed;
  } catch (error) {
    say(error.message, "error");
  }
}

async function reload(replay) {
  if (S.busy) return;
  setBusy(true);
  try {
    const body = { file: S.graph.file };
    if (replay && S.session && S.turn > 0) body.replay = S.session;
    const data = await api("POST", "/studio/api/reload", body);
    S.graphs = S.graphs.map((g) => (g.file === data.graph.file ? data.graph : g));
    S.graph = data.graph;
    showGraph();
    if (!data.ok) {
      say("The edited graph has errors (listed above); nothing was reloaded.", "error");
      return;
    }
    await drawGraph();
    S.replay = {};
    for (const row of data.replay || []) if (row.turn !== null) S.replay[row.turn] = row;
    S.session = null;
    await openSession(data.session);
    say(data.replay ? replaySummary(data.replay) : `Reloaded ${data.graph.name}: a new session on the edited graph.`, "ok");
  } catch (error) {
    say(error.message, "error");
  } finally {
    setBusy(false);
  }
}

function replaySummary(rows) {
  const differ = rows.filter((r) => r.differs.length && r.turn !== null).length;
  const unsent = rows.filter((r) => r.turn === null).length;
  let text = `Replayed ${rows.length} message${rows.length === 1 ? "" : "s"} on the edited graph: `;
  text += differ ? `${differ} turn${differ === 1 ? "" : "s"} now differ${differ === 1 ? "s" : ""} (marked below).` : "every turn goes as before.";
  if (unsent) text += ` ${unsent} not sent: the conversation now ends earlier.`;
  return text;
}

// ----- the picture ------------------------------------------------------------------------

async function drawGraph() {
  const open = [...S.opened].map(encodeURIComponent).join(",");
  const url = `/studio/api/picture?file=${encodeURIComponent(S.graph.file)}&open=${open}&v=${S.graph.version}`;
  let text;
  try {
    const response = await fetch(url);
    if (!response.ok) await answered(response);
    text = await response.text();
  } catch (error) {
    $("graph").replaceChildren(el("p", "error center", `The graph could not be drawn: ${error.message}`));
    S.view = null;
    return;
  }
  $("graph").innerHTML = text.slice(text.indexOf("<svg"));
  const svg = $("graph").querySelector("svg");
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  const box = svg.viewBox.baseVal;
  const full = { x: box.x, y: box.y, w: box.width, h: box.height };
  S.view = { svg, full, box: { ...full } };
  setBox(readable(svg, full));
  const opens = svg.querySelectorAll("g.node.opens");
  $("opens-hint").hidden = opens.length === 0;
  for (const node of opens) {
    node.addEventListener("click", () => toggleCluster(node.querySelector("title").textContent));
  }
  panAndZoom(svg);
  if (S.focus) light(S.focus);
}

async function toggleCluster(name) {
  if (S.opened.has(name)) S.opened.delete(name);
  else S.opened.add(name);
  await drawGraph();
  if (S.session) await refresh();
}

const MARKS = ["current", "entered", "taken", "path", "latest"];

function light(focus) {
  S.focus = focus;
  const svg = S.view && S.view.svg;
  if (!svg) return;
  for (const mark of MARKS) {
    for (const node of svg.querySelectorAll(`.${mark}`)) node.classList.remove(mark);
  }
  const mark = (ids, name) => {
    for (const id of ids) {
      const node = document.getElementById(id);
      if (node && svg.contains(node)) node.classList.add(name);
    }
  };
  mark(focus.entered, "entered");
  mark(focus.taken, "taken");
  mark(focus.path, "path");
  mark(focus.latest, "latest");
  mark([focus.current], "current");
  if ($("follow").checked) follow();
}

const READABLE = 1.0; // picture units per pixel at most: 11pt labels (states and exits) at 11 px

function readable(svg, full) {
  // The whole graph if it is legible so; else as wide as legible, from the top (the
  // current state is followed into view).
  const rect = svg.getBoundingClientRect();
  const k = Math.min(Math.max(full.w / Math.max(rect.width, 1), 1), READABLE);
  const w = rect.width * k;
  const h = rect.height * k;
  if (w >= full.w && h >= full.h) {
    // It all fits: scaled up to fill the pane, but not past a third larger.
    const m = Math.max(full.w / rect.width, full.h / rect.height, 0.75);
    return { x: full.x, y: full.y, w: rect.width * m, h: rect.height * m };
  }
  return { x: full.x + (full.w - w) / 2, y: full.y, w, h };
}

function setBox(wanted) {
  // Never further past the picture's edges than the pane needs: no empty half-pane.
  const { full } = S.view;
  const clamp = (start, size, from, length) => (size >= length
    ? from - (size - length) / 2
    : Math.min(Math.max(start, from), from + length - size));
  const box = { ...wanted, x: clamp(wanted.x, wanted.w, full.x, full.w), y: clamp(wanted.y, wanted.h, full.y, full.h) };
  S.view.box = box;
  S.view.svg.setAttribute("viewBox", `${box.x} ${box.y} ${box.w} ${box.h}`);
}

function scale() {
  // Picture units per screen pixel at the current zoom ("meet" fits the larger side).
  const rect = S.view.svg.getBoundingClientRect();
  return Math.max(S.view.box.w / Math.max(rect.width, 1), S.view.box.h / Math.max(rect.height, 1));
}

function zoom(factor, center) {
  const { box, full } = S.view;
  const w = Math.min(Math.max(box.w * factor, full.w / 40), full.w * 2);
  const k = w / box.w;
  const c = center || { x: box.x + box.w / 2, y: box.y + box.h / 2 };
  setBox({ x: c.x - (c.x - box.x) * k, y: c.y - (c.y - box.y) * k, w: box.w * k, h: box.h * k });
}

function pointOf(event) {
  const matrix = S.view.svg.getScreenCTM();
  if (!matrix) return null;
  const p = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
  return { x: p.x, y: p.y };
}

function panAndZoom(svg) {
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    zoom(event.deltaY < 0 ? 0.8 : 1.25, pointOf(event));
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.target.closest && event.target.closest("g.node.opens")) return;
    drag = { x: event.clientX, y: event.clientY, box: { ...S.view.box }, k: scale() };
    svg.setPointerCapture(event.pointerId);
    svg.classList.add("dragging");
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = (event.clientX - drag.x) * drag.k;
    const dy = (event.clientY - drag.y) * drag.k;
    setBox({ ...drag.box, x: drag.box.x - dx, y: drag.box.y - dy });
  });
  const stop = () => {
    drag = null;
    svg.classList.remove("dragging");
  };
  svg.addEventListener("pointerup", stop);
  svg.addEventListener("pointercancel", stop);
}

function follow() {
  // Keep the current state in view; on a large graph, start at a readable zoom around it.
  const view = S.view;
  const node = view.svg.querySelector("g.node.current");
  if (!node) return;
  const pane = view.svg.getBoundingClientRect();
  const r = node.getBoundingClientRect();
  const mx = pane.width * 0.08;
  const my = pane.height * 0.12;
  const inside = r.left >= pane.left + mx && r.right <= pane.right - mx
    && r.top >= pane.top + my && r.bottom <= pane.bottom - my;
  if (inside) return;
  const c = centerOf(node);
  const { box } = view;
  setBox({ ...box, x: c.x - box.w / 2, y: c.y - box.h / 2 });
}

function centerOf(node) {
  const r = node.getBoundingClientRect();
  return pointOf({ clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 });
}

// ----- sessions ---------------------------------------------------------------------------

function clearChat() {
  const agent = S.graph && S.graph.agent ? S.graph.agent : "the agent";
  const hint = el("li", "empty muted", `Say something below to talk with ${agent}. Under each reply, the path it took; open it to see why each move happened.`);
  $("messages").replaceChildren(hint);
  S.turn = 0;
  S.completed = false;
  S.variables = {};
  S.focus = null;
}

async function newSession() {
  const data = await api("POST", "/v1/sessions", { graph: S.graph.name });
  S.replay = {};
  await openSession(data.session);
}

async function openSession(id) {
  S.session = id;
  $("message").hidden = true; // what was said was about the session before
  clearChat();
  $("session-label").textContent = `session ${id}`;
  $("session-label").title = `session ${id}`;
  history.replaceState(null, "", `#graph=${encodeURIComponent(S.graph.file)}&session=${encodeURIComponent(id)}`);
  await refresh();
}

async function refresh() {
  const open = [...S.opened].map(encodeURIComponent).join(",");
  const data = await api("GET", `/studio/api/sessions/${encodeURIComponent(S.session)}?after=${S.turn}&open=${open}`);
  if (data.turns.length) $("messages").querySelector("li.empty")?.remove();
  for (const turn of data.turns) {
    const pending = $("messages").querySelector("li.turn.pending");
    renderTurn(turn, pending);
  }
  for (const details of $("messages").querySelectorAll("details.why")) {
    details.open = Number(details.closest("li").dataset.turn) === data.turn;
  }
  S.turn = data.turn;
  S.completed = data.completed;
  light(data.focus);
  renderNow(data);
  setEnabled();
  scrollChat();
}

async function listSessions() {
  const panel = $("sessions-panel");
  if (!panel.hidden) {
    panel.hidden = true;
    return;
  }
  try {
    const data = await api("GET", "/v1/sessions");
    const mine = data.sessions.filter((s) => s.graph === S.graph.name);
    $("sessions-graph").textContent = S.graph.name;
    $("sessions").replaceChildren(...mine.map((s) => {
      const item = el("li", s.session === S.session ? "current" : "");
      const open = el("button", "session-open", s.session);
      open.type = "button";
      open.dataset.session = s.session;
      open.addEventListener("click", async () => {
        panel.hidden = true;
        S.replay = {};
        await guarded(() => openSession(s.session));
      });
      const when = new Date(s.updated_at * 1000).toLocaleString();
      const state = s.completed ? "ended" : s.state;
      item.append(open, el("span", "muted", `${s.turn} turn${s.turn === 1 ? "" : "s"} · ${state} · ${when}`));
      return item;
    }));
    if (!mine.length) $("sessions").append(el("li", "muted", "No sessions yet."));
    panel.hidden = false;
  } catch (error) {
    say(error.message, "error");
  }
}

// ----- the chat ---------------------------------------------------------------------------

function setBusy(busy) {
  S.busy = busy;
  document.body.dataset.busy = busy ? "1" : "";
  setEnabled();
}

function setEnabled() {
  const live = Boolean(S.graph && S.graph.name && S.session);
  $("text").disabled = S.busy || !live || S.completed;
  $("send").disabled = $("text").disabled;
  $("undo").disabled = S.busy || !live || S.turn === 0;
  $("restart").disabled = S.busy || !live;
  $("save-button").disabled = S.busy || !live || S.turn === 0;
  $("sessions-button").disabled = !live;
  $("reload-new").disabled = S.busy;
  $("reload-replay").disabled = S.busy || !S.session || S.turn === 0;
  $("ended").hidden = !S.completed;
}

async function send(text) {
  if (S.busy || !text.trim()) return;
  setBusy(true);
  $("messages").querySelector("li.empty")?.remove();
  const item = el("li", "turn pending");
  item.append(el("div", "bubble user", text));
  const reply = el("div", "bubble agent streaming", "");
  reply.dataset.deltas = "0";
  item.append(reply);
  $("messages").append(item);
  scrollChat();
  try {
    const response = await fetch(`/v1/sessions/${encodeURIComponent(S.session)}/messages:stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text }),
    }).catch(() => {
      throw new Error("the studio server does not answer (is `cgraph studio` still running?)");
    });
    if (!response.ok) await answered(response);
    const turn = await streamed(response, reply);
    reply.classList.remove("streaming");
    if (!turn) throw new Error("the reply stopped before the turn ended");
    await refresh();
  } catch (error) {
    item.remove();
    say(`Not sent: ${error.message}`, "error");
    $("text").value = text;
  } finally {
    setBusy(false);
    $("text").focus();
  }
}

async function streamed(response, reply) {
  // Server-sent events over a POST: read the body, split on blank lines.
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let turn = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = parsed(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (event.name === "delta") {
        reply.textContent += event.data.text;
        reply.dataset.deltas = String(Number(reply.dataset.deltas) + 1);
        scrollChat();
      } else if (event.name === "retracted") {
        reply.textContent = "";
        reply.dataset.retracted = "1";
      } else if (event.name === "tools") {
        reply.dataset.tools = event.data.names.join(", ");
      } else if (event.name === "turn") {
        turn = event.data;
      } else if (event.name === "error") {
        throw new Error(event.data.error.message);
      }
    }
  }
  return turn;
}

function parsed(block) {
  const event = { name: "message", data: null };
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) event.name = line.slice(7);
    else if (line.startsWith("data: ")) event.data = JSON.parse(line.slice(6));
  }
  return event;
}

async function undo() {
  if (S.busy) return;
  setBusy(true);
  try {
    const data = await api("POST", `/v1/sessions/${encodeURIComponent(S.session)}/undo`);
    if (!data.undone) {
      say("Nothing to undo.", "info");
      return;
    }
    for (const item of $("messages").querySelectorAll("li.turn")) {
      if (Number(item.dataset.turn) > data.turn) item.remove();
    }
    S.turn = data.turn;
    await refresh();
    say(`Took back turn ${data.undone.turn} (“${data.undone.user ?? ""}”).`, "ok");
  } catch (error) {
    say(error.message, "error");
  } finally {
    setBusy(false);
  }
}

async function saveTest(name) {
  setBusy(true);
  try {
    const data = await api("POST", `/studio/api/sessions/${encodeURIComponent(S.session)}/test`, { name });
    $("save-form").hidden = true;
    say(`Saved case “${data.case}” (${data.turns} turns) to ${data.file}. Run it: ${data.command}`, "ok");
  } catch (error) {
    say(error.message, "error");
  } finally {
    setBusy(false);
  }
}

function scrollChat() {
  const list = $("messages");
  list.scrollTop = list.scrollHeight;
}

// ----- a turn as the page shows it --------------------------------------------------------

function renderTurn(turn, item) {
  const node = item || el("li", "turn");
  node.className = "turn";
  node.dataset.turn = String(turn.turn);
  const streamedReply = node.querySelector(".bubble.agent");
  const deltas = streamedReply ? streamedReply.dataset.deltas : null;
  node.replaceChildren();
  if (turn.user !== null) node.append(el("div", "bubble user", turn.user));
  const reply = el("div", "bubble agent", turn.reply || "(no reply)");
  if (deltas !== null) reply.dataset.deltas = deltas;
  if (turn.fallback) {
    reply.classList.add("fallback");
    reply.prepend(el("span", "tag warn", "fallback"), " ");
    reply.title = "The model failed: this is the graph's fallback reply.";
  }
  if (turn.clarified) reply.prepend(el("span", "tag", "asks which was meant"), " ");
  if (turn.completed) reply.append(" ", el("span", "tag end", "END"));
  node.append(reply, why(turn));
  const change = S.replay[turn.turn];
  if (change && change.differs.length) node.append(difference(change));
  if (!item) $("messages").append(node);
  return node;
}

function arrow(path) {
  return path.length ? path.join(" → ") : "stayed";
}

function why(turn) {
  const box = el("details", "why");
  const summary = el("summary", "", "");
  const path = turn.path.length > 1 ? arrow(turn.path) : turn.path.length ? `${turn.path[0]} (stayed)` : "no move";
  summary.append(el("span", "path", path));
  const tags = [];
  if (turn.guard) tags.push(["guard", "warn"]);
  const calls = turn.tool_calls.length + turn.effects.length;
  if (calls) tags.push([`${calls} tool call${calls === 1 ? "" : "s"}`, ""]);
  if (turn.slots.length) tags.push(["slots", ""]);
  if (turn.recalled.length) tags.push(["recalled", ""]);
  if (turn.warnings.length) tags.push(["warnings", "warn"]);
  for (const [text, kind] of tags) summary.append(" ", el("span", `tag ${kind}`, text));
  box.append(summary);
  const moves = movesOf(turn);
  if (moves.childElementCount) box.append(moves);
  for (const s of turn.slots) box.append(line("slots", `${s.state}: ${slotText(s)}`));
  for (const call of turn.effects) box.append(line("tool", `${call.state}: ${toolText(call)}`));
  for (const call of turn.tool_calls) box.append(line("tool", `the model called ${toolText(call)}`));
  for (const m of turn.recalled) box.append(line("recalled", `“${m.text}” (${m.tier}${m.score !== null ? `, ${m.score.toFixed(2)}` : ""})`));
  if (turn.guard) box.append(line("guard", `${turn.guard} stopped or re-routed this turn`));
  for (const w of turn.warnings) box.append(line("warning", w));
  return box;
}

function movesOf(turn) {
  // Each move said once: a step's scores sit under the move it chose; a step that chose
  // no move (it stays, or asks) is a line of its own, after the moves.
  const list = el("ul", "moves");
  const steps = [...turn.why];
  const stepOf = (from, to) => {
    const at = steps.findIndex((d) => d.state === from && d.chosen === to);
    return at < 0 ? null : steps.splice(at, 1)[0];
  };
  for (const t of turn.transitions) list.append(move(`${t.from} → ${t.to}`, t.reason, stepOf(t.from, t.to)));
  for (const d of steps) list.append(move(stayed(d), d.reason, d));
  return list;
}

function stayed(d) {
  // What a step that took no exit did, in the words a designer uses.
  if (d.chosen === "clarify") return `${d.state} asks which was meant`;
  if (d.chosen === "stay") return `${d.state} waits for the next message`;
  return `${d.state} picked ${d.chosen}`;
}

function move(what, reason, d) {
  const item = el("li", "step");
  item.append(el("span", "move", what));
  if (d && d.fallback) item.append(" ", el("span", "tag warn", "fallback"));
  const because = d && d.reason && d.reason !== reason ? `${reason}; ${d.reason}` : reason;
  if (because) item.append(" ", el("span", "reason", because));
  if (d) {
    const table = scores(d);
    if (table) item.append(table);
  }
  return item;
}

function scores(d) {
  // The candidates a step weighed, best first, names in full (they often share a prefix).
  const scored = [...d.candidates].filter((n) => d.scores[n] !== undefined)
    .sort((a, b) => d.scores[b] - d.scores[a]);
  if (scored.length < 2) return null;
  const top = Math.max(...scored.map((n) => d.scores[n]), 0.0001);
  const table = el("table", "scores");
  for (const name of scored) {
    const row = el("tr", name === d.chosen ? "chosen" : "");
    const bar = el("span", "bar");
    bar.style.width = `${Math.max(0, Math.min(1, d.scores[name] / top)) * 100}%`;
    const cell = el("td", "bar-cell");
    cell.append(bar);
    row.append(nameCell(name), cell, el("td", "score", d.scores[name].toFixed(2)));
    table.append(row);
  }
  return table;
}

function nameCell(name) {
  // A long id may wrap after an underscore, never inside a word, and is never cut.
  const cell = el("td", "name");
  cell.title = name;
  name.split(/(?<=_)/).forEach((part, i) => {
    if (i) cell.append(document.createElement("wbr"));
    cell.append(part);
  });
  return cell;
}

function line(kind, text) {
  const node = el("div", `line ${kind.replace(/\W+/g, "-")}`);
  node.append(el("span", "label", kind), " ", el("span", "", text));
  return node;
}

function slotText(s) {
  const parts = Object.entries(s.values).map(([name, value]) => {
    const was = s.corrected && name in s.corrected ? ` (was ${JSON.stringify(s.corrected[name])})` : "";
    return `${name} = ${JSON.stringify(value)}${was}`;
  });
  return parts.join(", ");
}

function toolText(call) {
  const outcome = call.status === "done" ? JSON.stringify(call.result) : call.error;
  return `${call.tool}(${JSON.stringify(call.arguments)}) ${call.status} → ${outcome}`;
}

function difference(change) {
  const box = el("div", "difference");
  box.append(el("div", "head", `Changed by the edit (was turn ${change.was_turn}):`));
  const { before, after } = change;
  if (change.differs.includes("path")) box.append(line("path", `was ${arrow(before.path)}; now ${arrow(after.path)}`));
  if (change.differs.includes("state") && !change.differs.includes("path")) box.append(line("ended in", `was ${before.state}; now ${after.state}`));
  if (change.differs.includes("reply")) box.append(line("reply", `was “${before.reply}”`));
  return box;
}

function renderNow(data) {
  const where = data.completed ? "END" : data.state;
  $("now-state").replaceChildren(el("strong", "", where));
  if (data.type) $("now-state").append(" ", el("span", "muted", `‹${data.type.replace("_", " ")}›`));
  $("now-state").append(" ", el("span", "muted", `· turn ${data.turn}`));
  const back = [...(data.interrupted || [])].reverse();
  if (back.length && !data.completed) {
    $("now-state").append(" ", el("span", "back", `· then back to ${back.join(", then ")}`));
  }
  const rows = Object.entries(data.variables).map(([name, value]) => {
    const before = Object.keys(S.variables).length ? JSON.stringify(S.variables[name]) : JSON.stringify(value);
    const row = el("tr", before !== JSON.stringify(value) ? "changed" : "");
    row.append(el("th", "", name), valueCell(value));
    return row;
  });
  if (!rows.length) rows.push(el("tr", "muted"));
  $("variables").tBodies[0].replaceChildren(...rows);
  S.variables = data.variables;
}

// A list (an `array` slot) one item a line, each a record's fields or the item itself.
function valueCell(value) {
  if (!Array.isArray(value) || !value.length) return el("td", "", JSON.stringify(value));
  const cell = el("td", "list");
  for (const item of value) cell.append(el("div", "item", JSON.stringify(item)));
  return cell;
}

// ----- start ------------------------------------------------------------------------------

async function guarded(action) {
  try {
    await action();
  } catch (error) {
    say(error.message, "error");
  }
}

function bind() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("text").value;
    $("text").value = "";
    send(text);
  });
  $("undo").addEventListener("click", undo);
  const restart = () => guarded(async () => {
    setBusy(true);
    try {
      await newSession();
    } finally {
      setBusy(false);
    }
  });
  $("restart").addEventListener("click", restart);
  $("restart-ended").addEventListener("click", restart);
  $("reload-new").addEventListener("click", () => reload(false));
  $("reload-replay").addEventListener("click", () => reload(true));
  $("sessions-button").addEventListener("click", listSessions);
  $("sessions-close").addEventListener("click", () => { $("sessions-panel").hidden = true; });
  $("message-close").addEventListener("click", () => { $("message").hidden = true; });
  $("save-button").addEventListener("click", () => {
    $("save-form").hidden = false;
    const first = $("messages").querySelector(".bubble.user");
    $("case-name").value = first ? `studio: ${first.textContent.slice(0, 60)}` : "studio conversation";
    $("case-name").select();
  });
  $("save-cancel").addEventListener("click", () => { $("save-form").hidden = true; });
  $("save-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveTest($("case-name").value);
  });
  $("graph-choice").addEventListener("change", () => guarded(() => useGraph($("graph-choice").value)));
  $("zoom-in").addEventListener("click", () => S.view && zoom(0.8));
  $("zoom-out").addEventListener("click", () => S.view && zoom(1.25));
  $("zoom-fit").addEventListener("click", () => S.view && setBox({ ...S.view.full }));
}

async function start() {
  bind();
  setEnabled();
  await guarded(async () => {
    await loadGraphs();
    const hash = new URLSearchParams(location.hash.slice(1));
    const file = hash.get("graph") || (S.graphs[0] && S.graphs[0].file);
    await useGraph(file, hash.get("session"));
  });
  document.body.dataset.ready = "1";
  setInterval(watch, WATCH_MS);
}

start();
