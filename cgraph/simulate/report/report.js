// The simulation report's page: styles the drawn graph by the runs the persona filter
// keeps (width by traffic, colour by the share that succeeded), lists the runs, and shows
// a run's transcript on a click. Everything it reads is in the page's JSON.
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const svg = document.querySelector("#picture svg");
const select = document.getElementById("persona");
const edgeIds = data.edges, nodeIds = data.nodes;

function kept() {
  const who = select.value;
  return data.runs.filter((r) => !who || r.persona === who);
}

// Red (no run through it succeeded) to green (every one did).
function colour(share) {
  const hue = Math.round(120 * share);
  return `hsl(${hue}, 70%, 38%)`;
}

function paint() {
  const runs = kept();
  const traffic = {}, passed = {}, entered = new Set(), stuck = new Set();
  const looping = new Set(), loopEdges = new Set();
  for (const run of runs) {
    for (const name of new Set(run.edges)) {
      traffic[name] = (traffic[name] || 0) + 1;
      if (run.success) passed[name] = (passed[name] || 0) + 1;
    }
    run.entered.forEach((s) => entered.add(s));
    if (run.stuck) stuck.add(run.stuck);
    for (const cycle of run.loops) {
      cycle.forEach((s) => looping.add(s));
    }
  }
  const most = Math.max(1, ...Object.values(traffic));
  svg.querySelectorAll("g.edge").forEach((g) => {
    g.classList.add("unreached");
    g.classList.remove("looping");
  });
  for (const [name, id] of Object.entries(edgeIds)) {
    const g = document.getElementById(id);
    if (!g || !traffic[name]) continue;
    g.classList.remove("unreached");
    const width = 1 + 7 * Math.sqrt(traffic[name] / most);
    const hue = colour((passed[name] || 0) / traffic[name]);
    g.querySelectorAll("path").forEach((p) => {
      p.setAttribute("stroke-width", width.toFixed(2));
      p.setAttribute("stroke", hue);
    });
    g.querySelectorAll("polygon").forEach((p) => { p.setAttribute("fill", hue); p.setAttribute("stroke", hue); });
    const [source] = name.split(" -> ");
    if (looping.has(source)) g.classList.add("looping");
    let title = g.querySelector("title");
    if (title) title.textContent = `${name}: ${traffic[name]} runs, ${passed[name] || 0} succeeded`;
  }
  svg.querySelectorAll("g.node").forEach((g) => g.classList.remove("unreached", "stuck", "looping"));
  for (const [name, id] of Object.entries(nodeIds)) {
    const g = document.getElementById(id);
    if (!g) continue;
    if (!entered.has(name)) g.classList.add("unreached");
    if (stuck.has(name)) g.classList.add("stuck");
    if (looping.has(name)) g.classList.add("looping");
  }
  findings(runs, stuck, looping);
  table(runs);
}

function findings(runs, stuck, looping) {
  const box = document.getElementById("findings");
  const ok = runs.filter((r) => r.success).length;
  const loops = new Map();
  runs.forEach((r) => r.loops.forEach((c) => loops.set(c.join(" → "), (loops.get(c.join(" → ")) || 0) + 1)));
  const wrong = new Map();
  runs.forEach((r) => r.transcript.forEach((t) => {
    if (t.verdict === "wrong") {
      const key = `in ${t.state}: meant ${t.meant}, took ${t.taken}`;
      wrong.set(key, (wrong.get(key) || 0) + 1);
    }
  }));
  const items = [];
  items.push(`<li class="${ok === runs.length ? "good" : "bad"}">${ok} of ${runs.length} runs succeeded</li>`);
  stuck.forEach((s) => items.push(`<li class="warn">stuck in <b>${esc(s)}</b> (ringed orange)</li>`));
  loops.forEach((n, c) => items.push(`<li class="warn">no-progress loop ${esc(c)} (${n} runs, dashed purple)</li>`));
  [...wrong.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6)
    .forEach(([k, n]) => items.push(`<li class="bad">wrong move ${esc(k)} (${n}×)</li>`));
  const unreached = data.summary.unreached_states;
  if (unreached.length) items.push(`<li>never reached (grey): ${unreached.map(esc).join(", ")}</li>`);
  box.innerHTML = `<h2>Findings</h2><ul>${items.join("")}</ul>`;
}

function table(runs) {
  const rows = runs.map((r, i) => `<tr data-i="${data.runs.indexOf(r)}"><td>${esc(r.persona)}</td>` +
    `<td>${r.run}</td><td>${r.seed}</td><td class="${r.success ? "good" : "bad"}">${r.success ? "success" : esc(r.failure)}</td>` +
    `<td>${r.transcript.length}</td></tr>`).join("");
  document.getElementById("runs").innerHTML =
    `<thead><tr><th>persona</th><th>run</th><th>seed</th><th>result</th><th>turns</th></tr></thead><tbody>${rows}</tbody>`;
}

function show(run, row) {
  document.querySelectorAll("tr.open").forEach((r) => r.classList.remove("open"));
  row.classList.add("open");
  const box = document.getElementById("transcript");
  const turns = run.transcript.map((t) => `<div class="turn"><span class="who">turn ${t.turn}<br>${esc(t.state)}</span>` +
    `<span><b>user</b> (${esc(t.kind)}): ${esc(t.user)}</span><span><b>agent</b>: ${esc(t.reply)}</span>` +
    `<span class="moves">meant <code>${esc(t.meant || "—")}</code>, took <code>${esc(t.taken || "—")}</code>` +
    (t.verdict ? ` <span class="verdict-${t.verdict}">${t.verdict}</span>` : "") +
    ` · path ${t.path.map(esc).join(" → ")}${t.guard ? " · guard " + esc(t.guard) : ""}${t.fallback ? " · fallback" : ""}</span></div>`).join("");
  const why = run.missing.length ? ` — ${run.missing.map(esc).join("; ")}` : "";
  const store = data.summary.store;
  const studio = store
    ? `<p class="meta">In the studio: <code>cgraph studio ${esc(data.summary.graph_file)} --store ${esc(store)}</code>, then open <code>#session=${esc(run.session)}</code> on its page.</p>`
    : `<p class="meta">Simulate with <code>--store DIR</code> to open this run in the studio (session <code>${esc(run.session)}</code>).</p>`;
  box.innerHTML = `<h2>${esc(run.persona)}, run ${run.run} (seed ${run.seed}): ${run.success ? "success" : esc(run.failure)}${why}</h2>${studio}${turns}`;
  box.hidden = false;
  box.scrollIntoView({ behavior: "smooth", block: "start" });
}

function esc(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

document.getElementById("runs").addEventListener("click", (e) => {
  const row = e.target.closest("tr[data-i]");
  if (row) show(data.runs[Number(row.dataset.i)], row);
});
select.addEventListener("change", paint);
document.getElementById("legend").innerHTML =
  `width: runs through an exit<i style="background:${colour(1)}"></i>all succeeded` +
  `<i style="background:${colour(0.5)}"></i>half<i style="background:${colour(0)}"></i>none` +
  `<i style="background:#cbd5e1"></i>never taken`;
paint();
