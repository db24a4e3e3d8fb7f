/* Owner's method form: show only the fieldsets of the chosen kind (command, image, web).
   Progressive enhancement: without JavaScript every fieldset is shown, and the server reads only the
   chosen kind's fields whatever is filled in. */
(function () {
  "use strict";
  var form = document.getElementById("spec-form");
  if (!form) return;
  var sets = form.querySelectorAll("fieldset[data-kinds]");

  function chosen() {
    var radio = form.querySelector("input[name=kind]:checked");
    return radio ? radio.value : "command";
  }

  function update() {
    var kind = chosen();
    for (var i = 0; i < sets.length; i++) {
      var kinds = sets[i].getAttribute("data-kinds").split(" ");
      sets[i].hidden = kinds.indexOf(kind) < 0;
    }
  }

  var radios = form.querySelectorAll("input[name=kind]");
  for (var i = 0; i < radios.length; i++) radios[i].addEventListener("change", update);
  update();
})();
