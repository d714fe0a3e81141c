// The session form: dsh's host settings fold away while a SillyTavern strategy is chosen. The server folds them for
// the strategy chosen when the page loads; this refolds them when the strategy radio changes. Without JavaScript the
// form works as served (the fold only hides fields, every field is posted either way).
(function () {
  "use strict";

  function setUp(choice) {
    var form = choice.closest("form");
    var fields = form && form.querySelector("[data-dsh-fields]");
    var template = form && form.querySelector("template[data-dsh-fold-template]");
    if (!fields || !template) {
      return;
    }
    var sillytavern = (choice.getAttribute("data-sillytavern-strategies") || "").split(" ").filter(Boolean);

    function fold(on) {
      var wrapper = fields.parentElement.closest("[data-dsh-host-settings]");
      if (on && !wrapper) {
        wrapper = template.content.firstElementChild.cloneNode(true);
        fields.parentNode.insertBefore(wrapper, fields);
        wrapper.appendChild(fields);
      } else if (!on && wrapper) {
        wrapper.parentNode.insertBefore(fields, wrapper);
        wrapper.remove();
      }
    }

    choice.addEventListener("change", function (event) {
      var radio = event.target;
      if (radio.name === "strategy" && radio.checked) {
        fold(sillytavern.indexOf(radio.value) !== -1);
      }
    });
  }

  function start() {
    document.querySelectorAll("[data-strategy-choice][data-sillytavern-strategies]").forEach(setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
