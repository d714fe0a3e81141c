"""Django admin for strategies and resources. Strategies and revisions are read-only here (drafts change through
the editor's services, with their version checks); built-ins can only be hidden. Prompt entries and world book
entries are ordered by dragging their rows (or by editing the number)."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from strategies_app.models import (
    Character,
    Persona,
    Preset,
    PromptEntry,
    RegexScript,
    ResourceCategory,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
    WorldBookEntry,
)
from studio.user_services import user_role, user_sessions_end


class DragOrderInline(admin.TabularInline):
    """A tabular inline whose rows are dragged into order; `order_field` is renumbered on drop."""

    order_field = "position"
    template = "admin/drag_order_tabular.html"
    extra = 0

    class Media:
        js = ["strategies_app/drag_order.js"]


class PromptEntryInline(DragOrderInline):
    model = PromptEntry
    order_field = "position"
    fields = ["position", "identifier", "name", "role", "enabled", "in_order", "marker", "content"]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        # Text columns as one-line inputs and a modest content box: the default textareas made the table wider
        # than the window (the studio's preset editor is the place for long prompt text).
        if db_field.name in ("identifier", "name"):
            kwargs["widget"] = forms.TextInput(attrs={"size": 12})
        elif db_field.name == "content":
            kwargs["widget"] = forms.Textarea(attrs={"rows": 2, "cols": 30})
        return super().formfield_for_dbfield(db_field, request, **kwargs)


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at", "prompt_manager"]
    search_fields = ["name"]
    inlines = [PromptEntryInline]
    readonly_fields = ["prompt_manager", "created_at"]

    @admin.display(description=_("Prompt Manager"))
    def prompt_manager(self, obj):
        if obj.pk is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("preset-editor", args=[obj.pk]),
                           _("Edit in the studio's Prompt Manager"))


class WorldBookEntryInline(DragOrderInline):
    model = WorldBookEntry
    order_field = "sort_order"
    fields = ["sort_order", "comment", "enabled", "content"]


@admin.register(WorldBook)
class WorldBookAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name"]
    inlines = [WorldBookEntryInline]


@admin.register(Character)
class CharacterAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name"]
    readonly_fields = ["avatar_image", "created_at"]

    @admin.display(description="avatar")
    def avatar_image(self, obj):
        if not obj.pk or not obj.avatar:
            return "-"
        return format_html('<img src="{}" alt="avatar of {}" style="max-height:96px">',
                           reverse("api-character-avatar", args=[obj.pk]), obj.name)


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    list_display = ["name", "position", "owner"]


@admin.register(ResourceCategory)
class ResourceCategoryAdmin(admin.ModelAdmin):
    list_display = ["key", "name_en", "name_zh", "sort_order"]
    readonly_fields = ["key", "module", "position"]

    def has_add_permission(self, request):
        return False  # the catalogue is the engine's; rows come from the data migration

    def has_delete_permission(self, request, obj=None):
        return False


class RevisionInline(admin.TabularInline):
    model = StrategyRevision
    fields = ["revision", "note", "author", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Strategy)
class StrategyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "builtin", "visible", "owner", "version", "updated_at"]
    list_filter = ["builtin", "visible"]
    search_fields = ["slug", "name"]
    readonly_fields = ["slug", "name", "owner", "builtin", "draft", "version", "created_at", "updated_at"]
    inlines = [RevisionInline]

    def has_add_permission(self, request):
        return False  # created by import or copy, through the services

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and not (obj is not None and obj.builtin)


@admin.register(StrategyRevision)
class StrategyRevisionAdmin(admin.ModelAdmin):
    list_display = ["strategy", "revision", "note", "author", "created_at"]
    readonly_fields = ["strategy", "revision", "document", "author", "note", "created_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # immutable

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(RegexScript)
class RegexScriptAdmin(admin.ModelAdmin):
    """Global regex scripts: `sort_order` is the order sessions run them in (then the name)."""

    list_display = ["name", "find_regex", "sort_order", "disabled", "prompt_only", "owner"]
    list_editable = ["sort_order", "disabled"]
    search_fields = ["name", "find_regex"]
    readonly_fields = ["created_at"]


# The user list shows each user's studio role (the Users page in the studio is where admins manage them).
class StudioUserAdmin(UserAdmin):
    list_display = (*UserAdmin.list_display, "studio_role", "is_active")

    @admin.display(description=_("role"))
    def studio_role(self, user) -> str:
        return user_role(user) or "-"

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")  # each row's role, without a query per row

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data and not obj.is_active:
            user_sessions_end(user=obj)  # as the Users page's deactivation does: logged out for good


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), StudioUserAdmin)


@admin.register(TextTemplate)
class TextTemplateAdmin(admin.ModelAdmin):
    """Text-completion templates; built-ins are the studio's and stay read-only (copy the fields to a new one)."""

    list_display = ("name", "kind", "builtin", "owner")
    list_filter = ("kind", "builtin")
    search_fields = ("name",)

    def get_readonly_fields(self, request, obj=None):
        return ("kind", "name", "fields", "builtin", "owner") if obj is not None and obj.builtin else ("builtin",)
