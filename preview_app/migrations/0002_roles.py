"""Create the groups admin / designer / qa with the permissions of web.md's table."""

from django.db import migrations

from strategies_app.reference_data import ensure_roles


def seed(apps, schema_editor):
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("preview_app", "0001_initial"),
        ("strategies_app", "0002_categories_and_builtins"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
