from django.apps import AppConfig


class PreviewAppConfig(AppConfig):
    name = "preview_app"
    verbose_name = "Sessions and previews"

    def ready(self):
        from preview_app.strategy_sessions import StrategySessions
        from strategies_app.session_previews import register

        register(StrategySessions())  # the strategy pages preview drafts on our sessions
