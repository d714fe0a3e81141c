// The parity page: a refused input (400, 413, 415) or assembly (404, 409) comes back as the result partial with
// the refusal in it, so htmx swaps it in like a success instead of dropping it.
(function () {
  "use strict";
  var SWAPPED_ERRORS = [400, 404, 409, 413, 415, 422];
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "parity-result" && SWAPPED_ERRORS.indexOf(event.detail.xhr.status) !== -1) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
