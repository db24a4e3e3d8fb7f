/* Admin predictor registration: poll the worker's test run and show its result in place.
   Without JavaScript the page offers a "Show the result" button instead. */
(function () {
  "use strict";
  var box = document.getElementById("test-result");
  if (!box || !box.getAttribute("data-poll")) return;
  var url = box.getAttribute("data-poll");
  var delay = 500;

  function finish(data) {
    box.removeAttribute("data-poll");
    var tested = document.querySelector("input[name=tested]");
    if (tested) tested.value = data.tested || "";
    var save = document.querySelector("input[name=_save]");
    if (save && data.tested) {
      save.disabled = false;
      save.removeAttribute("title");
    }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        box.innerHTML = data.html; /* rendered (and escaped) by the server's template */
        if (data.status === "done" || data.status === "expired") {
          finish(data);
        } else {
          delay = Math.min(delay * 1.5, 3000);
          window.setTimeout(poll, delay);
        }
      })
      .catch(function () {
        delay = Math.min(delay * 2, 10000);
        window.setTimeout(poll, delay);
      });
  }
  window.setTimeout(poll, delay);
})();
