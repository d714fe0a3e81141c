from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language

from preview_app import api_views as preview_api
from preview_app import parity_views, session_views
from preview_app import views as preview_views
from strategies_app import api_views as strategies_api
from strategies_app import preset_editor, resource_views
from strategies_app import urls as strategy_urls
from studio import admin_gate, glossary, users
from studio.login_form import StudioLoginForm

# The strategy pages, and their apply panel's POST: it writes sessions, so its view is preview_app's (strategies_app
# never imports preview_app).
strategy_pages = [*strategy_urls.urlpatterns,
                  path("<slug:slug>/apply/", session_views.apply_to_sessions, name="apply")]

urlpatterns = [
    path("", preview_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=StudioLoginForm), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", admin_gate.admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    # the language is chosen on the login page too: setting a cookie and going back is all the view does
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("strategies/", include((strategy_pages, strategy_urls.app_name))),
    path("", include("preview_app.urls")),
    path("resources/", resource_views.resource_list, name="resources"),
    path("resources/import/", resource_views.resource_import, name="resource-import"),
    path("resources/presets/<int:pk>/edit/", preset_editor.preset_editor, name="preset-editor"),
    path("glossary/", glossary.glossary, name="glossary"),
    path("users/", users.user_list, name="users"),
    path("users/add/", users.user_add, name="user-add"),
    path("users/<int:pk>/role/", users.user_role, name="user-role"),
    path("users/<int:pk>/deactivate/", users.user_deactivate, name="user-deactivate"),
    path("users/<int:pk>/reactivate/", users.user_reactivate, name="user-reactivate"),
    path("resources/regex/<int:pk>/toggle/", resource_views.regex_script_toggle, name="regex-toggle"),
    # JSON API (web.md "HTTP API")
    path("api/assemble", preview_api.assemble_request, name="api-assemble"),
    path("api/strategies", strategies_api.strategies, name="api-strategies"),
    path("api/strategies/<slug:slug>", strategies_api.strategy_detail, name="api-strategy"),
    path("api/strategies/<slug:slug>/draft", strategies_api.strategy_draft, name="api-strategy-draft"),
    path("api/strategies/<slug:slug>/revisions", strategies_api.strategy_revisions, name="api-strategy-revisions"),
    path("api/strategies/<slug:slug>/copy", strategies_api.strategy_copy, name="api-strategy-copy"),
    path("api/resources", strategies_api.resources, name="api-resources"),
    path("api/resources/<str:kind>/import", strategies_api.resource_import, name="api-resource-import"),
    path("api/resources/<str:kind>/<int:pk>/export", strategies_api.resource_export, name="api-resource-export"),
    path("api/resources/character/<int:pk>/avatar", strategies_api.character_avatar, name="api-character-avatar"),
    path("api/sessions", preview_api.sessions, name="api-sessions"),
    path("api/sessions/<int:pk>", preview_api.session_detail, name="api-session"),
    path("api/sessions/<int:pk>/events", preview_api.session_events, name="api-session-events"),
    path("api/sessions/<int:pk>/events/<int:seq>", preview_api.session_event, name="api-session-event"),
    path("api/sessions/<int:pk>/preview", preview_api.session_preview_api, name="api-session-preview"),
    path("api/sessions/<int:pk>/selection", preview_api.session_selection, name="api-session-selection"),
    path("api/sessions/<int:pk>/turns", preview_api.session_turns, name="api-session-turns"),
    path("api/sessions/<int:pk>/reroll", preview_api.session_reroll, name="api-session-reroll"),
    path("api/sessions/<int:pk>/parity", parity_views.session_parity_api, name="api-session-parity"),
    path("api/goldens", preview_api.goldens, name="api-goldens"),
    path("api/goldens/<int:pk>", preview_api.golden_detail, name="api-golden"),
]
