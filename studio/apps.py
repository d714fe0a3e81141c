from django.apps import AppConfig
from django.conf import settings


class StudioConfig(AppConfig):
    """The studio core: what every studio process sets up once at startup, and the users' remembered choices."""

    name = "studio"

    def ready(self) -> None:
        from studio.collector import tune_collector

        tune_collector(settings.STUDIO_GC_THRESHOLD)
