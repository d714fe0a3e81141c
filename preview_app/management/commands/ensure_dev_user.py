from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

DEV_USERNAME = "admin"
DEV_PASSWORD = "studio-dev-admin"


class Command(BaseCommand):
    help = "Create a local development superuser (never in production) so `make run` has someone to log in as."

    def handle(self, *args, **options):
        if getattr(settings, "PRODUCTION", False):
            raise CommandError("ensure_dev_user refuses to run with DJANGO_ENV=production")
        users = get_user_model()
        if users.objects.filter(username=DEV_USERNAME).exists():
            self.stdout.write(f"Development user '{DEV_USERNAME}' exists.")
            return
        users.objects.create_superuser(DEV_USERNAME, "", DEV_PASSWORD)
        self.stdout.write(f"Created development user '{DEV_USERNAME}' with password '{DEV_PASSWORD}'.")
