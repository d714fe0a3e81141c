"""The studio's login form: a deactivated user who gives their own password is told the account is deactivated, not
that the password is wrong (web.md, Users: an admin deactivates and reactivates accounts)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _


class StudioLoginForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": _("Your username and password didn't match. Please try again."),
        "inactive": _("This account has been deactivated. Ask an admin to reactivate it."),
    }

    def clean(self):
        try:
            return super().clean()
        except ValidationError as error:
            if error.code == "invalid_login" and self._deactivated_account_matches():
                raise ValidationError(self.error_messages["inactive"], code="inactive") from None
            raise

    def _deactivated_account_matches(self) -> bool:
        """Whether the name and password are a deactivated account's. A throttled login is not looked at (its
        answer would let passwords be guessed past the throttle), and every failed login pays one more password
        hash, found or not, so the time taken does not tell which names exist."""
        if getattr(self.request, "axes_locked_out", False):
            return False
        username, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        if not username or password is None:
            return False
        users = get_user_model()
        try:
            user = users._default_manager.get_by_natural_key(username)
        except users.DoesNotExist:
            users().set_password(password)
            return False
        return user.check_password(password) and not user.is_active
