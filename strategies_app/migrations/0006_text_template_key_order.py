from django.db import migrations

import strategies_app.models


def follow_builtin_text_templates(apps, schema_editor):
    """Built-in templates as the studio writes them now (Vicuna's one-line format, the plain story's transcript)."""
    from strategies_app.reference_data import ensure_text_templates

    ensure_text_templates(apps)


class Migration(migrations.Migration):

    dependencies = [
        ('strategies_app', '0005_text_template'),
    ]

    operations = [
        migrations.AlterField(
            model_name='texttemplate',
            name='fields',
            field=strategies_app.models.KeyOrderJSONField(blank=True, default=dict),
        ),
        migrations.RunPython(follow_builtin_text_templates, migrations.RunPython.noop),
    ]
