// The session page's composer: Enter previews (Shift+Enter is a new line); refusals (4xx) are swapped in place
// like answers, so the error shows where the message was typed. Without this file the buttons work as plain forms.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || !input.matches("[data-composer-input]")) {
      return;
    }
    event.preventDefault();
    var form = input.form;
    var button = form.querySelector("[data-composer-preview-button]");
    if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status >= 400 && status < 500 && event.detail.elt.closest("[data-composer]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    var input = document.querySelector("[data-composer-input]");
    if (input && document.activeElement === document.body) { input.focus(); }
  });
})();
