"""Seed the resource categories (position catalogue, zh and en names) and the read-only built-in strategies."""

from django.db import migrations

from strategies_app.reference_data import ensure_builtins, ensure_categories


def seed(apps, schema_editor):
    ensure_categories(apps)
    ensure_builtins(apps)


class Migration(migrations.Migration):
    dependencies = [("strategies_app", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
