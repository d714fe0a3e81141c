from django.apps import AppConfig


class StrategiesAppConfig(AppConfig):
    name = "strategies_app"
    verbose_name = "Strategies and resources"
