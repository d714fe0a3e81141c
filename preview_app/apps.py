from django.apps import AppConfig


class PreviewAppConfig(AppConfig):
    name = "preview_app"
    verbose_name = "Sessions and previews"
