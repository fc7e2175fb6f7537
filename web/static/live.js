// Kimi admin: live regions. An element with data-live="<SSE address>"
// listens there and replaces its content with each "fragment" event's
// server-rendered HTML. Without this script (or EventSource) the page is
// complete as served; a reload shows the same thing.
(function () {
  "use strict";
  if (!window.EventSource) { return; }
  var regions = document.querySelectorAll("[data-live]");
  Array.prototype.forEach.call(regions, function (el) {
    var src = el.getAttribute("data-live");
    if (!src) { return; }
    var es = new EventSource(src);
    es.addEventListener("fragment", function (ev) {
      el.innerHTML = ev.data;
      el.setAttribute("data-live-updated", String(Date.now()));
    });
    window.addEventListener("pagehide", function () { es.close(); });
  });
})();
