"""Django admin for sessions, their history and golden snapshots. The applied selection and goldens are read-only
here: applying goes through `strategy_apply` (its 409 check), approving through `golden_approve`."""

from django.contrib import admin

from preview_app.models import GoldenSnapshot, Session, SessionEvent


class SessionEventInline(admin.TabularInline):
    model = SessionEvent
    fields = ["seq", "message_id", "role", "name", "content", "source", "tool_call_id"]
    extra = 0


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "applied_strategy", "updated_at"]
    search_fields = ["name"]
    readonly_fields = ["applied_strategy", "applied_revision", "applied_document", "created_at", "updated_at"]
    filter_horizontal = ["world_books"]
    inlines = [SessionEventInline]


@admin.register(GoldenSnapshot)
class GoldenSnapshotAdmin(admin.ModelAdmin):
    list_display = ["session", "revision", "approved_by", "approved_at"]
    readonly_fields = ["session", "revision", "result", "approved_by", "approved_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
