// Kimi admin: live regions. An element with data-live="<SSE address>"
// listens there and replaces its content with each "fragment" event's
// server-rendered HTML. Without this script (or EventSource) the page is
// complete as served; a reload shows the same thing. A control marked
// data-live-keep (with an id) keeps what was typed into it, and its focus,
// when the fragment that replaces it has it too (a half-typed reason is not
// lost to an update).
// Copy buttons: a [data-copy] button copies its value (a Discord id) to the
// clipboard. The root's data-copy attribute reveals them (app.css), so
// without this script the names stay plain text with the id in the title.
(function () {
  "use strict";
  if (!navigator.clipboard || !navigator.clipboard.writeText) { return; }
  document.documentElement.setAttribute("data-copy", "");
  document.addEventListener("click", function (ev) {
    var b = ev.target && ev.target.closest ? ev.target.closest("button[data-copy]") : null;
    if (!b) { return; }
    ev.preventDefault();
    navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
      b.classList.add("is-copied");
      window.setTimeout(function () { b.classList.remove("is-copied"); }, 1500);
    }, function () {});
  });
})();
(function () {
  "use strict";
  if (!window.EventSource) { return; }
  var regions = document.querySelectorAll("[data-live]");
  Array.prototype.forEach.call(regions, function (el) {
    var src = el.getAttribute("data-live");
    if (!src) { return; }
    var es = new EventSource(src);
    es.addEventListener("fragment", function (ev) {
      var kept = {};
      Array.prototype.forEach.call(el.querySelectorAll("[data-live-keep][id]"), function (f) {
        kept[f.id] = f.value;
      });
      var active = document.activeElement;
      var focused = active && active.id && el.contains(active) ? active.id : "";
      el.innerHTML = ev.data;
      Object.keys(kept).forEach(function (id) {
        var f = document.getElementById(id);
        if (f && el.contains(f) && f.hasAttribute("data-live-keep")) { f.value = kept[id]; }
      });
      if (focused) {
        var again = document.getElementById(focused);
        if (again && el.contains(again)) { again.focus(); }
      }
      el.setAttribute("data-live-updated", String(Date.now()));
    });
    window.addEventListener("pagehide", function () { es.close(); });
  });
})();

// Pickers (channel, role and member fields; templates.PickerField). The
// page works without this: the select lists what the bot can see, and the
// search box beside it suggests by name from its datalist and takes a
// pasted id. This filters the select as one types; a suggestion taken
// from the datalist, or Enter on an exact name (or on the one member a
// search found), moves the choice into the select instead of submitting;
// for members (data-search) it asks the server for names as one types.
(function () {
  "use strict";
  var pickers = document.querySelectorAll("[data-picker]");
  function bare(t) { return t.trim().replace(/^[#@]/, "").toLowerCase(); }
  Array.prototype.forEach.call(pickers, function (el) {
    var sel = el.querySelector("select");
    var box = el.querySelector("input.picker-search");
    var list = el.querySelector("datalist");
    if (!sel || !box || !list) { return; }
    var search = el.getAttribute("data-search");
    var from = el.getAttribute("data-guild-from");
    // searchURL is the member search of the guild chosen in the picker
    // named by data-guild-from (its box, else its select), else data-search.
    function searchURL() {
      var box = from && document.getElementById(from);
      var choice = from && document.getElementById(from + "-choose");
      var g = ((box && box.value.trim()) || (choice && choice.value) || "");
      return /^[0-9]{1,20}$/.test(g) ? "/guilds/" + g + "/members/search" : search;
    }
    var timer = 0, asked = "";
    function filter(q) {
      Array.prototype.forEach.call(sel.options, function (o) {
        o.hidden = q !== "" && o.value !== "" && !o.selected &&
          o.text.toLowerCase().indexOf(q) < 0 && o.value.indexOf(q) !== 0;
      });
      Array.prototype.forEach.call(sel.querySelectorAll("optgroup"), function (g) {
        g.hidden = !Array.prototype.some.call(g.children, function (o) { return !o.hidden; });
      });
    }
    // find is the option (of the select, else of the datalist) whose id
    // is raw or, byName, whose name is; a search's only result otherwise.
    function find(raw, byName) {
      var all = Array.prototype.slice.call(sel.options).concat(Array.prototype.slice.call(list.options));
      var q = bare(raw);
      return all.find(function (o) { return o.value !== "" && o.value === raw.trim(); }) ||
        (byName && all.find(function (o) { return o.value !== "" && bare(o.text.split(" · ")[0]) === q; })) ||
        (byName && (search || from) && list.options.length === 1 ? list.options[0] : null);
    }
    function choose(found) {
      var o = Array.prototype.find.call(sel.options, function (x) { return x.value === found.value; });
      if (!o) {
        o = document.createElement("option");
        o.value = found.value;
        o.textContent = found.textContent;
        sel.appendChild(o);
      }
      if (sel.multiple) { o.selected = true; } else { sel.value = o.value; }
      box.value = "";
      filter("");
      el.setAttribute("data-picked", o.value);
    }
    var picked = false;
    box.addEventListener("keydown", function (ev) {
      picked = false;
      if (ev.key !== "Enter" || box.value.trim() === "") { return; }
      var found = find(box.value, true);
      if (found) { ev.preventDefault(); choose(found); picked = true; }
    });
    box.addEventListener("keypress", function (ev) {
      // The Enter that picked must not submit the form either.
      if (ev.key === "Enter" && picked) { ev.preventDefault(); picked = false; }
    });
    box.addEventListener("input", function (ev) {
      var raw = box.value.trim();
      if (raw !== "" && (!ev.inputType || ev.inputType === "insertReplacementText")) { // a datalist suggestion
        var found = find(raw, false);
        if (found) { choose(found); return; }
      }
      var q = raw.toLowerCase();
      filter(q.replace(/^[#@]/, ""));
      var url = searchURL();
      if (!url) { return; }
      clearTimeout(timer);
      if (q === "" || /^[0-9, ]+$/.test(q)) { return; }
      timer = setTimeout(function () {
        asked = q;
        fetch(url + "?q=" + encodeURIComponent(q), { credentials: "same-origin" })
          .then(function (r) { return r.ok ? r.text() : ""; })
          .then(function (html) {
            if (asked !== q) { return; } // a later query is under way
            list.innerHTML = html; // escaped server-side (templates.MemberOptions)
            el.setAttribute("data-searched", q);
          });
      }, 150);
    });
  });
})();
