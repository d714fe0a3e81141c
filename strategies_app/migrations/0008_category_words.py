"""The resource categories' words again: the greeting row's help now says where the greeting is really sent."""

from django.db import migrations

from strategies_app.reference_data import ensure_categories


def refresh(apps, schema_editor):
    ensure_categories(apps)


class Migration(migrations.Migration):
    dependencies = [("strategies_app", "0007_key_order_json")]
    operations = [migrations.RunPython(refresh, migrations.RunPython.noop)]
