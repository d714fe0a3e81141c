"""The plain choice widgets write what Django's own widgets write (studio.choice_widgets), as HTML compares: the
same options, values, labels (escaped), selected and checked marks, ids and groups."""

from django import forms
from django.test.html import parse_html

from studio.choice_widgets import PlainCheckboxes, PlainSelect

CHOICES = [("", "(none)"), ("1", "Tom & <Jerry>"), ("Group", [("2", "inside"), ("3", "also \"quoted\"")]),
           ("4", "last")]


class _Form(forms.Form):
    django_select = forms.ChoiceField(choices=CHOICES, required=False)
    plain_select = forms.ChoiceField(choices=CHOICES, required=False, widget=PlainSelect)
    django_boxes = forms.MultipleChoiceField(choices=CHOICES[1:], required=False,
                                             widget=forms.CheckboxSelectMultiple)
    plain_boxes = forms.MultipleChoiceField(choices=CHOICES[1:], required=False, widget=PlainCheckboxes)


def _same(form: _Form, django_name: str, plain_name: str) -> bool:
    plain = str(form[plain_name]).replace(plain_name, django_name)
    return parse_html(plain) == parse_html(str(form[django_name]))


def test_a_plain_select_writes_django_selects_options():
    for chosen in ("", "1", "3"):
        form = _Form(initial={"django_select": chosen, "plain_select": chosen})
        assert _same(form, "django_select", "plain_select")
        assert "Tom &amp; &lt;Jerry&gt;" in str(form["plain_select"])


def test_plain_checkboxes_write_django_checkboxes():
    for chosen in ([], ["1"], ["2", "4"]):
        form = _Form(initial={"django_boxes": chosen, "plain_boxes": chosen})
        assert _same(form, "django_boxes", "plain_boxes")
        assert str(form["plain_boxes"]).count(" checked") == len(chosen)


def test_a_bound_form_keeps_what_was_posted():
    form = _Form(data={"django_select": "2", "plain_select": "2", "django_boxes": ["3"], "plain_boxes": ["3"]})
    assert _same(form, "django_select", "plain_select") and _same(form, "django_boxes", "plain_boxes")
    assert '<option value="2" selected>inside</option>' in str(form["plain_select"])
