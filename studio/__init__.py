"""The studio core both Django apps share: refusals (`errors`), HTTP plumbing (`http`) and every code, lock and
refusal in words (`wording`). No models, no views; neither app is imported from here."""
