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
