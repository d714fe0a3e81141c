"""Pages of sessions, previews, comparisons and goldens (web.md screens 3, 4, 5, 7). The JSON API is in config/urls.py."""

from django.urls import path

from preview_app import parity_views, session_views, text_template_editor, text_views, views

app_name = "preview"
urlpatterns = [
    path("sessions/", session_views.sessions, name="sessions"),
    path("sessions/new/", session_views.session_create, name="session-create"),
    path("sessions/<int:pk>/", session_views.session_detail, name="session"),
    path("sessions/<int:pk>/edit/", session_views.session_edit, name="session-edit"),
    path("sessions/<int:pk>/events/", session_views.event_add, name="event-add"),
    path("sessions/<int:pk>/greet/", session_views.session_greet, name="session-greet"),
    path("sessions/<int:pk>/chat/import/", session_views.chat_import, name="chat-import"),
    path("sessions/<int:pk>/chat.jsonl", session_views.chat_export, name="chat-export"),
    path("sessions/<int:pk>/copy/", session_views.session_copy, name="session-copy"),
    path("sessions/<int:pk>/delete/", session_views.session_delete, name="session-delete"),
    path("sessions/<int:pk>/events/<int:seq>/", session_views.event_edit, name="event-edit"),
    path("sessions/<int:pk>/events/<int:seq>/delete/", session_views.event_delete, name="event-delete"),
    path("sessions/<int:pk>/events/<int:seq>/move/", session_views.event_move, name="event-move"),
    path("sessions/<int:pk>/apply/", session_views.session_apply, name="session-apply"),
    path("sessions/<int:pk>/commit/", session_views.turn_commit, name="turn-commit"),
    path("sessions/<int:pk>/say/", session_views.session_say, name="session-say"),
    path("sessions/<int:pk>/preview/", views.preview, name="preview"),
    path("sessions/<int:pk>/preview/reroll/", views.preview_reroll, name="preview-reroll"),
    path("sessions/<int:pk>/preview/projection/", views.preview_projection, name="preview-projection"),
    path("sessions/<int:pk>/preview/across-models/", views.preview_across, name="preview-across"),
    path("sessions/<int:pk>/preview/rows/", views.preview_rows, name="preview-rows"),
    path("sessions/<int:pk>/preview/<str:shape>.json", views.preview_export, name="preview-export"),
    path("sessions/<int:pk>/compare/", views.compare, name="compare"),
    path("sessions/<int:pk>/compare/rows/", views.compare_rows, name="compare-rows"),
    path("sessions/<int:pk>/parity/", parity_views.parity, name="parity"),
    path("sessions/<int:pk>/text/", text_views.text_preview_page, name="text"),
    path("sessions/<int:pk>/text/settings/", text_views.text_settings, name="text-settings"),
    path("sessions/<int:pk>/text/compare/", text_views.text_compare, name="text-compare"),
    path("sessions/<int:pk>/text/parity/", text_views.text_parity_page, name="text-parity"),
    path("sessions/<int:pk>/text/templates.json", text_views.text_templates_export, name="text-templates-export"),
    path("text-templates/<int:pk>/edit/", text_template_editor.template_editor, name="text-template-edit"),
    path("text-templates/<int:pk>/copy/", text_template_editor.template_copy, name="text-template-copy"),
    path("goldens/", views.goldens, name="goldens"),
    path("goldens/pin/", views.golden_pin, name="golden-pin"),
    path("goldens/<int:pk>/latest/", views.golden_latest, name="golden-latest"),
    path("goldens/<int:pk>/delete/", views.golden_delete, name="golden-delete"),
]
