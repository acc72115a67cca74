// The practice page's script (docs/practice.md). Every judgement comes from
// the engine (src/web/engine.cpp compiled to WebAssembly: attn_practice,
// attn_explore); this script only draws what it answers and keeps the
// learner's answers file in localStorage.
(function () {
  "use strict";
  var A = window.ATTN;
  var doc = document;
  doc.documentElement.className += " js";
  var status = doc.getElementById("status");
  var words = A.words;
  var practice = null, explore = null;
  var state = null;      // the engine's last answer (attn_practice's JSON)
  var selected = null;   // "STEP:ROW:COL" of the cell the feedback is about
  var lessonText = A.lesson;

  function say(format) {
    var args = Array.prototype.slice.call(arguments, 1), k = 0;
    return format.replace(/\{\}/g, function () { return String(args[k++]); });
  }
  function el(tag, cls, text) {
    var e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function button(label, action) {
    var b = el("button", "", label);
    b.type = "button";
    b.addEventListener("click", action);
    return b;
  }
  function cellKey(c) { return c.step + ":" + c.row + ":" + c.col; }
  function load(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }
  function store(key, value) { try { localStorage.setItem(key, value); } catch (e) { /* private mode */ } }
  function download(name, text) {
    var a = el("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "application/toml" }));
    a.download = name;
    doc.body.appendChild(a);
    a.click();
    a.remove();
  }

  // ---- practice ------------------------------------------------------------
  function call(action, cell, typed) {
    var saved = state ? state.saved : (load(A.key) || A.saved);
    var answer = JSON.parse(practice(A.lesson, saved, action, cell || "", typed || "", A.lang));
    if (!answer.ok && !state && saved !== A.saved) {
      // A stored session this lesson no longer reads: start again from the page's own.
      answer = JSON.parse(practice(A.lesson, A.saved, "view", "", "", A.lang));
    }
    if (answer.ok) {
      state = answer;
      store(A.key, state.saved);
    }
    return answer;
  }

  function feedbackFor(key) {
    if (!state) return null;
    for (var i = 0; i < state.marks.length; i++)
      if (cellKey(state.marks[i].cell) === key) return state.marks[i];
    return null;
  }

  // The verdict of `key` (the cell last answered or chosen), the engine's
  // notice or error, and the hint just taken, under the prompt.
  function showFeedback(key, answer) {
    var box = doc.getElementById("feedback");
    box.textContent = "";
    if (answer && !answer.ok) {
      box.appendChild(el("p", "error", answer.error));
      return;
    }
    var mark = key ? feedbackFor(key) : null;
    if (mark) {
      box.appendChild(el("p", "verdict v-" + mark.verdict, mark.cell.name + " — " + mark.text));
      mark.lines.forEach(function (l) { box.appendChild(el("p", "line", l)); });
    }
    if (answer && answer.mark && answer.mark.follow_up_added)
      answer.mark.lines.slice(-1).forEach(function (l) { box.appendChild(el("p", "line", l)); });
    if (answer && answer.mark && answer.mark.verdict === "wrong" && cellKey(answer.mark.cell) === key)
      box.appendChild(el("p", "line", words.try_again));
    if (key === hintsFor) hints.forEach(function (l) { box.appendChild(el("p", "hint", l)); });
    if (answer && answer.notice) box.appendChild(el("p", "line", answer.notice));
  }

  function draw(answer) {
    var records = {};
    state.records.forEach(function (r, i) { records[cellKey(r.cell)] = { r: r, order: i + 1 }; });
    doc.querySelectorAll("#practice td[data-cell]").forEach(function (td) {
      var key = td.getAttribute("data-cell"), rec = records[key], input = td.querySelector("input");
      var cls = rec ? "asked" : "";
      var sup = td.querySelector("sup");
      if (rec) {
        if (!sup) { sup = el("sup"); td.insertBefore(sup, input); }
        sup.textContent = rec.order;
        input.value = rec.r.typed;
        if (rec.r.state === "skipped") cls += " skipped";
      } else {
        if (sup) sup.remove();
        input.value = "";
      }
      var mark = feedbackFor(key);
      if (mark) cls += " v-" + mark.verdict;
      if (state.current && cellKey(state.current) === key) cls += " current";
      td.className = cls;
      input.title = mark ? mark.text : "";
    });
    var done = state.records.filter(function (r) { return r.state !== "pending"; }).length;
    progress.textContent = say(words.done, done, state.records.length);
    var now = state.current ? records[cellKey(state.current)] : null;
    promptName.textContent = !state.current ? words.finished
      : state.current.name + (now && now.r.typed ? say(words.wrote, now.r.typed) : "") + " = ";
    promptInput.hidden = !state.current;
    promptInput.value = "";
    drawSummary();
    showFeedback(selected, answer);
    var td = state.current && doc.querySelector('#practice td[data-cell="' + cellKey(state.current) + '"]');
    if (td && td.scrollIntoView) td.scrollIntoView({ block: "center" });
  }

  function drawSummary() {
    var box = doc.getElementById("summary");
    box.textContent = "";
    box.appendChild(el("h3", "", words.summary));
    if (state.finished) box.appendChild(el("p", "", words.finished));
    state.summary.lines.forEach(function (l) { box.appendChild(el("p", "", l)); });
  }

  // After an answer the prompt asks the next cell; the learner's eyes stay there.
  function focusPrompt() { if (state.current) promptInput.focus(); }

  // One thing done: the engine's answer drawn. `key`: the cell it is about
  // (empty: the cell asked now).
  function act(action, key, typed) {
    var answer = call(action, key, typed);
    if (!answer.ok) {
      showFeedback(null, answer);
      return answer;
    }
    var now = state.current ? cellKey(state.current) : null;
    // The hints shown are those of the cell asked, every rung taken since it was asked.
    if (answer.hint) {
      if (hintsFor !== (answer.mark ? cellKey(answer.mark.cell) : now)) hints = [];
      hintsFor = answer.mark ? cellKey(answer.mark.cell) : now;
      hints = hints.concat(answer.hint.text.split("\n"));
    } else if (hintsFor !== now) {
      hints = [];
    }
    selected = answer.mark ? cellKey(answer.mark.cell) : action === "hint" ? now : (key || now);
    draw(answer);
    return answer;
  }

  // A line typed at the prompt or into a grid's cell: a command letter, or an answer.
  function typedIn(value, key) {
    value = value.trim();
    if (value === "") return;
    if (value === "?") { showFeedback(null, { ok: true, notice: words.help }); return; }
    var command = { h: "hint", s: "skip", b: "back" }[value];
    if (command) act(command, command === "hint" ? key : "");
    else act("answer", key, value);
  }

  var progress = el("span", "progress"), promptName = el("label", "prompt"), promptInput = el("input");
  var hints = [], hintsFor = null;
  function reset() {
    state = null;
    selected = null;
    hints = [];
    hintsFor = null;
    store(A.key, A.saved);
    act("view");
  }
  function startPractice() {
    var bar = doc.querySelector("#bar .controls");
    promptInput.setAttribute("inputmode", "decimal");
    promptInput.setAttribute("autocomplete", "off");
    promptInput.id = "prompt";
    promptName.htmlFor = "prompt";
    promptInput.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") return;
      e.preventDefault();
      typedIn(promptInput.value, "");
      focusPrompt();
    });
    [progress, promptName, promptInput,
     button(words.hint, function () { act("hint", ""); }),
     button(words.skip, function () { act("skip"); }),
     button(words.back, function () { act("back"); }),
     button(words.download, function () { download(A.id + ".answers.toml", state.saved); }),
     button(words.restart, function () { if (window.confirm(words.restart_sure)) reset(); }),
     el("span", "kept", words.saved_in)].forEach(function (e) { bar.appendChild(e); });
    doc.querySelectorAll("#practice td[data-cell]").forEach(function (td) {
      var key = td.getAttribute("data-cell"), input = td.querySelector("input");
      input.addEventListener("keydown", function (e) {
        if (e.key !== "Enter") return;
        e.preventDefault();
        typedIn(input.value, key);
      });
      // Leaving a cell (Tab, a click elsewhere) marks it as Enter does, unless
      // what it holds is already its answer.
      input.addEventListener("change", function () {
        var rec = state && state.records.filter(function (r) { return cellKey(r.cell) === key; })[0];
        if (!rec || rec.typed !== input.value.trim()) typedIn(input.value, key);
      });
      input.addEventListener("focus", function () {
        selected = key;
        showFeedback(key, null);
      });
    });
    act("view");
    status.textContent = words.ready;
    focusPrompt();
  }

  // ---- explore -------------------------------------------------------------
  function number(v) { return typeof v === "number" ? v : parseFloat(v); }
  function shown(v) {
    var x = number(v);
    if (!isFinite(x)) return String(v);
    var s = x.toFixed(4);
    return s === "-0.0000" ? "0.0000" : s;
  }

  function escaped(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  // Every step of the explored lesson: its numbers (the given ones as inputs),
  // or for a large step its top-left corner, shape and statistics. Written as
  // one piece of HTML (a hundred steps redrawn at once); the inputs' changes
  // reach one listener on the section (startExplore).
  function drawTrace(answer) {
    lastSteps = answer.steps;
    var html = [];
    answer.steps.forEach(function (step) {
      var given = answer.editable.indexOf(step.id) >= 0;
      html.push('<figure class="' + (given ? "given" : "computed") + '" data-step="' + escaped(step.id) +
                '"><figcaption><b>' + escaped(step.id) + "</b> · " + escaped(step.name) + " · " +
                escaped(step.formula) + "</figcaption>");
      if (!step.whole)
        html.push('<p class="large">' + escaped(say(words.corner, step.data.length, step.cols.length,
                  step.shape[0], step.shape[1]) + (step.stats ? " · " + step.stats : "")) + "</p>");
      html.push("<table><tr><th></th>");
      step.cols.forEach(function (c) { html.push("<th>" + escaped(c) + "</th>"); });
      html.push("</tr>");
      step.data.forEach(function (row, r) {
        html.push("<tr><th>" + escaped(step.rows[r]) + "</th>");
        row.forEach(function (v, c) {
          var key = escaped(step.id + ":" + r + ":" + c);
          html.push('<td data-cell="' + key + '">' + (given
            ? '<input inputmode="decimal" data-edit="' + key + '" value="' + escaped(number(v)) +
              '" aria-label="' + escaped(step.id + "[" + step.rows[r] + ", " + step.cols[c] + "]") + '">'
            : escaped(shown(v))) + "</td>");
        });
        html.push("</tr>");
      });
      html.push("</table></figure>");
    });
    var box = doc.getElementById("explore-steps");
    box.innerHTML = html.join("");
    drawn = Array.prototype.map.call(box.querySelectorAll("figure"), function (fig) {
      return fig.querySelectorAll("td");
    });
  }

  // After an edit only the numbers change: each cell's text (or a given
  // number's box) is set again in place, and nothing is laid out anew.
  function redrawNumbers(answer) {
    var same = drawn && drawn.length === answer.steps.length && answer.steps.every(function (step, k) {
      return lastSteps[k].id === step.id && drawn[k].length === step.data.length * step.cols.length;
    });
    if (!same) return drawTrace(answer);
    lastSteps = answer.steps;
    answer.steps.forEach(function (step, k) {
      var tds = drawn[k], i = 0;
      step.data.forEach(function (row) {
        row.forEach(function (v) {
          var td = tds[i++], input = td.firstChild;
          if (input && input.tagName === "INPUT") {
            if (doc.activeElement !== input) input.value = String(number(v));
          } else {
            var text = shown(v);
            if (td.textContent !== text) td.textContent = text;
          }
        });
      });
      var note = step.stats && tds[0] && tds[0].closest("figure").querySelector("p.large");
      if (note) note.textContent = say(words.corner, step.data.length, step.cols.length, step.shape[0],
                                       step.shape[1]) + " · " + step.stats;
    });
  }

  // The edits made, in order, kept in localStorage (not the edited text, which
  // for a large lesson is a megabyte to write at every edit) and made again
  // when the page is opened again.
  var timing, exploreError, lastSteps = null, edits = [], drawn = null;
  function edit(cell, input) {
    var t0 = performance.now();
    var answer = JSON.parse(explore(lessonText, cell + "=" + input.value.trim(), A.lang));
    var ms = performance.now() - t0;
    if (!answer.ok) {
      exploreError.textContent = answer.error;
      input.className = "bad";
      return;
    }
    exploreError.textContent = "";
    lessonText = answer.toml;
    edits.push(cell + "=" + input.value.trim());
    store(A.key + "/explore", JSON.stringify(edits));
    input.className = "";
    redrawNumbers(answer);
    timing.textContent = say(words.recomputed, ms.toFixed(1));
    doc.documentElement.setAttribute("data-explore-ms", ms.toFixed(3));
  }

  var exploring = false;
  function startExplore() {
    if (exploring) return;
    exploring = true;
    var box = doc.getElementById("explore");
    box.appendChild(el("h2", "", words.explore));
    box.appendChild(el("p", "", words.explore_how));
    var bar = el("div", "bar");
    bar.appendChild(button(words.download_lesson, function () { download(A.id + "-explored.toml", lessonText); }));
    bar.appendChild(button(words.reset_lesson, function () {
      lessonText = A.lesson;
      edits = [];
      store(A.key + "/explore", "[]");
      drawTrace(JSON.parse(explore(lessonText, "", A.lang)));
    }));
    timing = el("span", "timing");
    bar.appendChild(timing);
    box.appendChild(bar);
    exploreError = el("p", "error");
    box.appendChild(exploreError);
    var steps = el("div");
    steps.id = "explore-steps";
    steps.addEventListener("change", function (e) {
      var key = e.target.getAttribute("data-edit");
      if (key) edit(key, e.target);
    });
    box.appendChild(steps);
    var kept = [];
    try { kept = JSON.parse(load(A.key + "/explore") || "[]"); } catch (e) { kept = []; }
    var answer = JSON.parse(explore(lessonText, "", A.lang));
    (Array.isArray(kept) ? kept : []).forEach(function (change) {
      var again = answer.ok ? JSON.parse(explore(lessonText, String(change), A.lang)) : answer;
      if (!again.ok) return;
      answer = again;
      lessonText = again.toml;
      edits.push(String(change));
    });
    if (answer.ok) drawTrace(answer);
  }

  // The engine's module: base64 of its gzip (attn-engine.wasm.gz), inflated
  // by the browser; emscripten's loader is given the bytes and fetches nothing.
  function engineModule() {
    var text = atob(A.engine), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    var inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(inflated).arrayBuffer();
  }

  status.textContent = words.loading;
  var started = typeof DecompressionStream === "function" ? engineModule() : Promise.reject(new Error("no DecompressionStream"));
  started.then(function (module) { return AttnEngine({ wasmBinary: new Uint8Array(module) }); }).then(function (M) {
    var strings = ["string", "string", "string", "string", "string", "string"];
    practice = M.cwrap("attn_practice", "string", strings);
    explore = M.cwrap("attn_explore", "string", strings.slice(0, 3));
    startPractice();
    var box = doc.getElementById("explore-box");
    box.addEventListener("toggle", function () { if (box.open) startExplore(); });
    doc.documentElement.setAttribute("data-ready", "1");
    doc.documentElement.setAttribute("data-ready-ms", performance.now().toFixed(1));
  }, function () {
    status.textContent = words.failed;
  });
  // For tests and the curious: the same calls the page makes.
  window.attnPage = {
    act: act, reset: reset, typed: typedIn,
    explore: function () { doc.getElementById("explore-box").open = true; startExplore(); },
    state: function () { return state; },
    lesson: function () { return lessonText; },
    steps: function () { return lastSteps; }
  };
})();
