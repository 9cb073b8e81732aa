// agentrt trajectory viewer: plain JavaScript, no build step, no network beyond this server's /view/api.
// The server decodes every token with the model's tokenizer; this page only draws what it is sent.
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
const state = { sel: null, mode: "both", info: null, newSince: 0, timer: 0, live: false };

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function api(path, params) {
  const q = params ? "?" + new URLSearchParams(params).toString() : "";
  const r = await fetch("api/" + path + q, { credentials: "same-origin", cache: "no-store" });
  const body = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// bin maps a logprob to one of the colour bins of style.css (b0: p >= .95 ... b8: p < .01).
const BINS = [0.95, 0.8, 0.6, 0.4, 0.2, 0.1, 0.05, 0.01];
function bin(lp) {
  const p = Math.exp(lp);
  for (let i = 0; i < BINS.length; i++) if (p >= BINS[i]) return i;
  return BINS.length;
}

function fmtReward(r) {
  if (r === null || r === undefined) return "–";
  return Number.isInteger(r) ? String(r) : r.toFixed(3).replace(/0+$/, "").replace(/\.$/, "");
}
function fmtMS(ms) { return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms >= 10 ? ms.toFixed(0) + " ms" : ms.toFixed(2) + " ms"; }
function badge(status, reason) {
  const st = status || "running";
  return `<span class="badge st-${esc(st)}" title="${esc(reason || "")}">${esc(st)}${reason ? " · " + esc(reason) : ""}</span>`;
}
function base(path) { return path ? String(path).replace(/\/+$/, "").split("/").pop() : ""; }

// ---- the list ---------------------------------------------------------------------------------------------

function filters() {
  const f = {};
  for (const el of $("#filters").elements) if (el.name && el.value.trim() !== "") f[el.name] = el.value.trim();
  return f;
}

async function loadInfo() {
  const info = await api("info");
  state.info = info;
  const src = info.source;
  let line = src.kind === "file" ? "file " + src.name : src.name;
  if (src.capacity) line += ` · the latest ${src.capacity} trajectories`;
  if (src.skipped) line += ` · ${src.skipped} lines skipped (${src.first_skip})`;
  $("#source").textContent = line;
  $("#source").title = line;
  fillSelect($("#f-status"), Object.keys(info.statuses).sort(), (s) => `${s} (${info.statuses[s]})`);
  fillSelect($("#f-agent"), info.agents, (a) => a);
}

function fillSelect(sel, values, label) {
  const cur = sel.value;
  const opts = ['<option value="">any</option>'];
  const seen = new Set(values);
  if (cur && !seen.has(cur)) values = values.concat([cur]);
  for (const v of values) opts.push(`<option value="${esc(v)}">${esc(label(v))}</option>`);
  sel.innerHTML = opts.join("");
  sel.value = cur;
}

async function loadList() {
  let res;
  try {
    res = await api("trajectories", filters());
  } catch (e) {
    $("#count").textContent = "filter: " + e.message;
    return;
  }
  const groups = new Map();
  for (const s of res.items) {
    if (!groups.has(s.group_id)) groups.set(s.group_id, []);
    groups.get(s.group_id).push(s);
  }
  const html = [];
  const manyAgents = state.info && state.info.agents.length > 1;
  for (const [gid, items] of groups) {
    items.sort((a, b) => a.sample_index - b.sample_index);
    const chips = items.map((s) => `<span class="chip" title="sample ${s.sample_index}: reward ${fmtReward(s.reward)}">${esc(fmtReward(s.reward))}</span>`).join("");
    const gsel = state.sel && state.sel.kind === "g" && state.sel.id === gid ? " sel" : "";
    html.push(`<li class="group" data-group="${esc(gid)}"><div class="ghead${gsel}" data-group="${esc(gid)}" title="compare the samples of ${esc(gid)} side by side">` +
      `<span class="gid">${esc(gid)}</span><span class="n">${items.length} sample${items.length === 1 ? "" : "s"}</span><span class="chips">${chips}</span></div><ul class="items">`);
    for (const s of items) {
      const sel = state.sel && state.sel.kind === "t" && state.sel.id === s.id ? " sel" : "";
      html.push(`<li class="item${sel}" data-id="${esc(s.id)}" data-status="${esc(s.status)}" data-agent="${esc(s.agent || "")}" data-reward="${s.reward ?? ""}">` +
        `<span class="sid">#${s.sample_index}</span>${badge(s.status)}<span class="reward">${esc(fmtReward(s.reward))}</span>` +
        `<span class="facts">${s.agent && manyAgents ? esc(s.agent) + " · " : ""}${s.turns} turn${s.turns === 1 ? "" : "s"} · ${s.tokens} tok` +
        `${s.tool_errors ? ` · <span class="err" title="tool calls that failed or were malformed">${s.tool_errors} err</span>` : ""}</span></li>`);
    }
    html.push("</ul></li>");
  }
  $("#list").innerHTML = html.join("");
  const count = $("#count");
  count.dataset.matched = res.matched;
  count.dataset.shown = res.items.length;
  count.textContent = res.matched === res.total ? `${res.total} trajectories` :
    `${res.matched} of ${res.total} trajectories match`;
  if (res.items.length < res.matched) count.textContent += ` (newest ${res.items.length} shown)`;
}

// ---- tokens -----------------------------------------------------------------------------------------------

function tokenText(d, i) {
  if (!d.token_view.have_texts) return `⟨${d.token_view.ids[i]}⟩`;
  const s = d.token_view.text[i];
  return esc(s).replace(/\n/g, '<span class="nl">↵</span>\n').replace(/\t/g, '<span class="tab">→</span>\t');
}

// tokensHTML draws tokens [from, to) of d; kind is the segment's ("response" tokens with loss mask 0 are masked
// off-policy tokens).
function tokensHTML(d, from, to, kind) {
  const t = d.token_view, out = [];
  const special = d._special || (d._special = new Set(t.special || []));
  for (let i = from; i < to; i++) {
    let cls = "t m" + t.mask[i];
    const lp = t.logprob[i];
    cls += lp === null ? " nolp" : " b" + bin(lp);
    if (kind === "response" && t.mask[i] === 0) cls += " off";
    if (special.has(i)) cls += " sp";
    const text = tokenText(d, i);
    if (text === "") cls += " blank";
    out.push(`<span class="${cls}" data-i="${i}">${text}</span>`);
  }
  return out.join("");
}

function versionAt(d, i) {
  for (const w of d.weight_versions || []) if (i >= w.start && i < w.end) return w.version;
  return "";
}

function tipHTML(d, i) {
  const t = d.token_view, lp = t.logprob[i];
  const seg = d.segments.find((s) => i >= s.offset && i < s.offset + s.length);
  const rows = [
    ["token", `#${i}` + (seg ? ` · ${seg.kind} of turn ${seg.turn}, ${i - seg.offset + 1}/${seg.length}` : "")],
    ["id", `<code>${t.ids[i]}</code>` + ((t.special || []).includes(i) ? " · special" : "")],
  ];
  if (t.have_texts) {
    rows.push(["text", `<code>${esc(JSON.stringify(t.text[i]))}</code>`]);
    if (t.piece && t.piece[i] !== undefined) rows.push(["piece", `<code>${esc(JSON.stringify(t.piece[i]))}</code>`]);
  }
  rows.push(["logprob", lp === null ? "none (first prompt: not requested, so the group shares SGLang's prefix cache)" :
    `<code>${lp.toFixed(4)}</code> · p = ${Math.exp(lp).toFixed(3)}`]);
  rows.push(["loss mask", `<code>${t.mask[i]}</code>` + (seg && seg.kind === "response" && t.mask[i] === 0 ? " (masked off-policy)" : "")]);
  const v = versionAt(d, i);
  if (v) rows.push(["weights", `<code>${esc(v)}</code>`]);
  return "<table>" + rows.map(([k, v]) => `<tr><td>${k}</td><td>${v}</td></tr>`).join("") + "</table>";
}

function setupTip() {
  const tip = $("#tip");
  let cur = null;
  document.addEventListener("mouseover", (e) => {
    const el = e.target.closest && e.target.closest(".t");
    const box = el && el.closest("[data-traj]");
    if (!el || !box || !box._d) { tip.hidden = true; if (cur) cur.classList.remove("hl"); cur = null; return; }
    if (cur) cur.classList.remove("hl");
    cur = el;
    el.classList.add("hl");
    tip.innerHTML = tipHTML(box._d, Number(el.dataset.i));
    tip.hidden = false;
    placeTip(e);
  });
  document.addEventListener("mousemove", (e) => { if (!tip.hidden) placeTip(e); });
  function placeTip(e) {
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = e.clientX + 14, y = e.clientY + 16;
    if (x + w > innerWidth - 8) x = Math.max(8, e.clientX - w - 14);
    if (y + h > innerHeight - 8) y = Math.max(8, e.clientY - h - 16);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
}

// ---- one trajectory ---------------------------------------------------------------------------------------

// segHead is a segment's header: its kind, turn and size, and a response's provenance (compact: the essentials,
// for a group's narrow columns).
function segHead(d, s, i, folded, compact) {
  const kv = (k, v) => `<span class="kv">${k} <b>${v}</b></span>`;
  const parts = [`<span class="kind">${s.kind.toUpperCase()}</span>`, kv("turn", s.turn), kv("tokens", s.length)];
  if (s.kind === "prompt") {
    if (!compact) parts.push(`<span class="kv">loss mask 0${i === 0 ? " · the rendered conversation and tools" : " · the template's delta: tool results, next generation prompt"}</span>`);
  } else if (s.info) {
    const n = s.info;
    if (n.server && !compact) parts.push(kv("worker", esc(n.server)));
    parts.push(kv("latency", fmtMS(n.latency_ms || 0)));
    if (n.overhead_ms !== undefined && !compact) parts.push(kv("runtime", fmtMS(n.overhead_ms)));
    parts.push(kv("cached", `${n.cached_tokens}/${n.prompt_tokens}`));
    const versions = (n.weight_versions || []).map((w) => w.version);
    if (versions.length > 1) parts.push(kv("weights", esc(versions.join(" → "))));
    else if (n.weight_version) parts.push(kv("weights", esc(n.weight_version)));
    if (n.finish_reason) parts.push(kv("finish", esc(n.finish_reason)));
    if (n.resumed) parts.push(kv("resumed", n.resumed));
    if (s.drift && !s.drift.canonical) parts.push(`<span class="kv"><b>non-canonical tokens</b> (first at +${s.drift.first_diff})</span>`);
    if (n.rid && !compact) parts.push(`<span class="kv" title="SGLang rid">rid <b>${esc(n.rid)}</b></span>`);
  }
  return `<div class="seghead">${parts.join("")}<span class="collapse" data-fold>${folded ? "unfold" : "fold"}</span></div>`;
}

function callCards(c) {
  return (c.tool_calls || []).map((tc) =>
    `<div class="card call"><div class="ch"><b>${esc(tc.name)}</b>${tc.id ? `<span>${esc(tc.id)}</span>` : ""}</div>` +
    `<pre>${esc(prettyJSON(tc.arguments))}</pre></div>`).join("");
}

function resultCards(c) {
  return (c.results || []).map((m) => {
    const err = /^parse_error/.test(m.tool_call_id || "") || /^Error\b/.test(m.content);
    return `<div class="card result${err ? " err" : ""}"><div class="ch"><b>${esc(m.name || "")}</b>` +
      `${m.tool_call_id ? `<span>${esc(m.tool_call_id)}</span>` : ""}</div><pre>${esc(m.content)}</pre></div>`;
  }).join("");
}

function prettyJSON(v) {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") { try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; } }
  return JSON.stringify(v, null, 2);
}

// segmentsHTML draws d's segments from index first on, with each call's tool calls after its response and the
// results before the prompt that carries them.
function segmentsHTML(d, first, compact) {
  const calls = new Map((d.calls || []).map((c) => [c.turn, c]));
  const html = [];
  d.segments.forEach((s, i) => {
    if (i < first) return;
    const fold = (s.kind === "prompt" && i === 0 && s.length > 120) || s.length > 800;
    html.push(`<div class="seg ${s.kind}${fold ? " folded" : ""}" data-seg="${i}">${segHead(d, s, i, fold, compact)}`);
    if (s.kind === "prompt" && i > 0) {
      const prev = calls.get(s.turn - 1);
      if (prev && prev.results) html.push(`<div class="calls">${resultCards(prev)}</div>`);
    }
    html.push(`<div class="toks">${tokensHTML(d, s.offset, s.offset + s.length, s.kind)}</div>`);
    if (s.kind === "response") {
      const c = calls.get(s.turn);
      if (c && c.tool_calls) html.push(`<div class="calls">${callCards(c)}</div>`);
    }
    html.push("</div>");
  });
  return html.join("");
}

function toolbar() {
  const b = (m, label) => `<button type="button" data-mode="${m}" class="${state.mode === m ? "on" : ""}">${label}</button>`;
  const bins = BINS.map((p, i) => `<span class="b${i}" title="p ≥ ${p}"></span>`).join("") + `<span class="b8" title="p < 0.01"></span>`;
  return `<div class="toolbar"><span>colour by</span><span class="seg-btns">${b("both", "loss mask + logprob")}${b("mask", "loss mask")}${b("logprob", "logprob")}</span>` +
    `<span class="bins"><span class="lbl">p ≥ .95</span>${bins}<span class="lbl">p &lt; .01</span><span class="m0" title="loss mask 0"></span><span class="lbl">loss mask 0</span>` +
    `<span class="off" title="response token with loss mask 0"></span><span class="lbl">masked off-policy</span></span></div>`;
}

function facts(d) {
  const f = (k, v) => (v === "" || v === undefined || v === null ? "" : `<span>${k} <b>${v}</b></span>`);
  const p = d.provenance || {};
  const m = d.metrics || {};
  return `<div class="facts-grid">` + [
    f("agent", esc(d.agent || "")), f("model", esc(base(d.model))), f("family", esc(p.family || "")),
    f("item", esc(d.item_id)), `<span>group <a class="link" data-goto-group="${esc(d.group_id)}">${esc(d.group_id)}</a></span>`,
    f("sample", d.sample_index), f("turns", d.turns), f("tokens", `${d.token_view.ids.length} (${d.response_tokens} generated)`),
    f("tool calls", d.tool_calls ? `${d.tool_calls}${d.tool_errors ? ` (${d.tool_errors} failed)` : ""}` : ""),
    f("parse errors", Object.keys(m).filter((k) => k.startsWith("parse_errors.")).map((k) => `${k.slice(13)} ${m[k]}`).join(", ")),
    f("tokenizer", d.token_view.have_texts ? esc(base(d.token_view.tokenizer)) : ""),
  ].join("") + `</div>`;
}

function moreHTML(d) {
  const sec = (title, v) => (v === undefined || v === null || (typeof v === "object" && Object.keys(v).length === 0) ? "" :
    `<details class="more"><summary>${title}</summary><pre>${esc(typeof v === "string" ? v : JSON.stringify(v, null, 2))}</pre></details>`);
  return sec("provenance", d.provenance) + sec("metrics", d.metrics) + sec("label", d.label) + sec("metadata", d.metadata) +
    sec("conversation the episode started from", (d.prompt || []).map((m) => `[${m.role}] ${m.content}`).join("\n\n"));
}

function attach(el, d) {
  for (const box of el.querySelectorAll("[data-traj]")) box._d = d;
}

async function showTrajectory(id) {
  const main = $("#main");
  let d;
  try {
    d = await api("trajectory", { id });
  } catch (e) {
    main.innerHTML = `<div class="alert">${esc(id)}: ${esc(e.message)}</div>`;
    return;
  }
  if (!state.sel || state.sel.kind !== "t" || state.sel.id !== id) return;
  const notes = [];
  if (d.invalid) notes.push(`<div class="alert">this trajectory breaks an invariant: ${esc(d.invalid)}</div>`);
  if (d.error) notes.push(`<div class="alert">${esc(d.error)}</div>`);
  if (d.stop_message) notes.push(`<div class="note">stopped: ${esc(d.stop_message)}</div>`);
  for (const w of d.warnings || []) notes.push(`<div class="note">${esc(w)}</div>`);
  if (!d.token_view.have_texts) notes.push(`<div class="note">token ids only: ${esc(d.token_view.tokenizer || "no tokenizer for this model")}</div>`);
  main.innerHTML = `<section class="tview" data-traj>` +
    `<div class="thead"><h2>${esc(d.id)}</h2>${badge(d.status, d.status_reason)}<span class="reward" title="reward">reward ${esc(fmtReward(d.reward))}</span></div>` +
    facts(d) + notes.join("") + toolbar() + segmentsHTML(d, 0) + moreHTML(d) + `</section>`;
  attach(main, d);
  if (main.dataset.id !== id) main.scrollTop = 0;
  main.dataset.view = "trajectory";
  main.dataset.id = id;
}

// ---- a group side by side ---------------------------------------------------------------------------------

function samePrefix(samples) {
  const a = samples[0];
  if (samples.length < 2 || !a.segments.length) return false;
  const s0 = a.segments[0];
  return samples.every((b) => b.segments.length && b.segments[0].length === s0.length &&
    b.token_view.ids.slice(0, s0.length).every((id, i) => id === a.token_view.ids[i]));
}

async function showGroup(id) {
  const main = $("#main");
  let g;
  try {
    g = await api("group", { id });
  } catch (e) {
    main.innerHTML = `<div class="alert">group ${esc(id)}: ${esc(e.message)}</div>`;
    return;
  }
  if (!state.sel || state.sel.kind !== "g" || state.sel.id !== id) return;
  const ss = g.samples;
  const rewards = ss.map((d) => d.reward).filter((r) => r !== null && r !== undefined);
  const hi = Math.max(...rewards), lo = Math.min(...rewards);
  const mean = rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null;
  const shared = samePrefix(ss);
  const head = `<div class="thead"><h2>group ${esc(id)}</h2><span>${ss.length} samples</span>` +
    (mean !== null ? `<span class="reward">mean reward ${esc(fmtReward(mean))}</span>` : "") + `</div>`;
  let sharedHTML = "";
  if (shared) {
    const s0 = ss[0].segments[0];
    sharedHTML = `<div data-traj data-sample="shared"><div class="seg prompt folded" data-seg="0">` +
      `<div class="seghead"><span class="kind">SHARED PROMPT</span><span class="kv">tokens <b>${s0.length}</b></span>` +
      `<span class="kv">every sample starts from these tokens</span><span class="collapse" data-fold>unfold</span></div>` +
      `<div class="toks">${tokensHTML(ss[0], 0, s0.length, "prompt")}</div></div></div>`;
  }
  const cols = ss.map((d) => {
    let cls = "col";
    if (rewards.length > 1 && hi !== lo && d.reward === hi) cls += " best";
    if (rewards.length > 1 && hi !== lo && d.reward === lo) cls += " worst";
    return `<div class="${cls}" data-traj data-sample="${d.sample_index}" data-id="${esc(d.id)}">` +
      `<div class="colhead"><span class="sid">#${d.sample_index}</span>${badge(d.status, d.status_reason)}` +
      `<span class="reward">reward ${esc(fmtReward(d.reward))}</span><span>${d.turns} turns · ${d.response_tokens} generated</span>` +
      `<a class="link open" data-goto="${esc(d.id)}">open</a></div>${segmentsHTML(d, shared ? 1 : 0, true)}</div>`;
  }).join("");
  main.innerHTML = `<section class="gview">${head}${toolbar()}${sharedHTML}<div class="cols">${cols}</div></section>`;
  $(".cols", main).style.gridTemplateColumns = `repeat(${ss.length}, minmax(240px, 1fr))`;
  if (main.dataset.id !== id) main.scrollTop = 0;
  const boxes = main.querySelectorAll("[data-traj]");
  boxes.forEach((box) => {
    const k = box.dataset.sample;
    box._d = k === "shared" ? ss[0] : ss.find((d) => String(d.sample_index) === k);
  });
  main.dataset.view = "group";
  main.dataset.id = id;
}

// ---- navigation and live updates --------------------------------------------------------------------------

function route() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has("t")) state.sel = { kind: "t", id: h.get("t") };
  else if (h.has("g")) state.sel = { kind: "g", id: h.get("g") };
  else state.sel = null;
  highlight();
  if (state.sel && state.sel.kind === "t") showTrajectory(state.sel.id);
  else if (state.sel) showGroup(state.sel.id);
}

// highlight marks the selection in the list.
function highlight() {
  for (const el of document.querySelectorAll(".item.sel, .ghead.sel")) el.classList.remove("sel");
  const sel = state.sel;
  if (!sel) return;
  const el = sel.kind === "t" ? document.querySelector(`.item[data-id="${CSS.escape(sel.id)}"]`) :
    document.querySelector(`.ghead[data-group="${CSS.escape(sel.id)}"]`);
  if (el) el.classList.add("sel");
}

function go(kind, id) { location.hash = kind + "=" + encodeURIComponent(id); }

function setMode(m) {
  state.mode = m;
  const main = $("#main");
  main.classList.remove("mode-both", "mode-mask", "mode-logprob");
  main.classList.add("mode-" + m);
  for (const b of document.querySelectorAll(".toolbar [data-mode]")) b.classList.toggle("on", b.dataset.mode === m);
}

// refreshSoon reloads the list (and redraws the open view if a new trajectory belongs to it), at most twice a
// second however fast trajectories arrive.
function refreshSoon(s, redraw) {
  state.redraw = state.redraw || redraw;
  if (s) { state.newSince++; showLive(); }
  if (state.timer) return;
  state.timer = setTimeout(async () => {
    state.timer = 0;
    await Promise.all([loadInfo().catch(() => {}), loadList()]);
    highlight();
    if (state.redraw) { state.redraw = false; route(); }
  }, 500);
}

function showLive() {
  const el = $("#live");
  const kind = state.info && state.info.source.kind === "file" ? "following the file" : "live";
  el.className = "live " + (state.live ? "on" : "off");
  el.textContent = state.live ? `${kind}${state.newSince ? ` · ${state.newSince} new` : ""}` : "reconnecting…";
  el.dataset.new = state.newSince;
}

function connect() {
  const es = new EventSource("api/events");
  es.addEventListener("hello", () => {
    // The stream is subscribed now: reload the list, since what arrived between the first list and the
    // subscription (a file still being indexed, a trajectory just finished) sent no event to this page; on a
    // reconnect, what arrived meanwhile (or a restarted server).
    refreshSoon(null, false);
    state.connected = state.live = true;
    showLive();
  });
  es.addEventListener("trajectory", (e) => {
    const s = JSON.parse(e.data);
    const sel = state.sel;
    refreshSoon(s, sel && ((sel.kind === "g" && sel.id === s.group_id) || (sel.kind === "t" && sel.id === s.id)));
  });
  es.addEventListener("reset", () => refreshSoon(null, true));
  es.onerror = () => { state.live = false; showLive(); };
}

function init() {
  setupTip();
  setMode("both");
  let ft = 0;
  $("#filters").addEventListener("input", () => { clearTimeout(ft); ft = setTimeout(loadList, 200); });
  $("#filters").addEventListener("submit", (e) => e.preventDefault());
  $("#list").addEventListener("click", (e) => {
    const item = e.target.closest(".item");
    if (item) return go("t", item.dataset.id);
    const g = e.target.closest(".ghead");
    if (g) go("g", g.dataset.group);
  });
  $("#main").addEventListener("click", (e) => {
    const m = e.target.closest("[data-mode]");
    if (m) return setMode(m.dataset.mode);
    const gg = e.target.closest("[data-goto-group]");
    if (gg) return go("g", gg.dataset.gotoGroup);
    const gt = e.target.closest("[data-goto]");
    if (gt) return go("t", gt.dataset.goto);
    const f = e.target.closest("[data-fold]");
    if (f) {
      const seg = f.closest(".seg");
      seg.classList.toggle("folded");
      f.textContent = seg.classList.contains("folded") ? "unfold" : "fold";
    }
  });
  window.addEventListener("hashchange", route);
  Promise.all([loadInfo(), loadList()]).then(route, (e) => { $("#main").innerHTML = `<div class="alert">${esc(e.message)}</div>`; });
  connect();
}

document.addEventListener("DOMContentLoaded", init);
