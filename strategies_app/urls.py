"""Pages of strategies: the list, the editor and its write actions, revisions (web.md screens 1 and 2). The JSON API
and the apply panel's POST (`strategies:apply`, a write of sessions: preview_app's) are added in config/urls.py."""

from django.urls import path

from strategies_app import revision_views, views

app_name = "strategies"
urlpatterns = [
    path("", views.strategy_list, name="list"),
    path("new/", views.strategy_create, name="create"),
    path("import/", views.strategy_import, name="import"),
    path("<slug:slug>/edit/", views.strategy_edit, name="edit"),
    path("<slug:slug>/copy/", views.strategy_copy, name="copy"),
    path("<slug:slug>/settings/", views.settings_update, name="settings"),
    path("<slug:slug>/rules/order/", views.rules_order, name="rules-order"),
    path("<slug:slug>/rules/add/", views.rule_add, name="rule-add"),
    path("<slug:slug>/rules/<str:rule_id>/edit/", views.rule_update, name="rule-update"),
    path("<slug:slug>/rules/<str:rule_id>/remove/", views.rule_remove, name="rule-remove"),
    path("<slug:slug>/controls/", views.control_set, name="control"),
    path("<slug:slug>/positions/order/", views.positions_order, name="positions-order"),
    path("<slug:slug>/positions/", views.position_update, name="position-update"),
    path("<slug:slug>/priority/order/", views.priority_order, name="priority-order"),
    path("<slug:slug>/layout/", views.layout_update, name="layout"),
    path("<slug:slug>/undo/", views.draft_undo, name="undo"),
    path("<slug:slug>/blocks/move/", views.block_move, name="block-move"),
    path("<slug:slug>/blocks/reset/", views.block_reset, name="block-reset"),
    path("<slug:slug>/revisions/", revision_views.revisions, name="revisions"),
    path("<slug:slug>/revisions/save/", views.revision_save, name="revision-save"),
]
