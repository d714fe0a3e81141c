from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('preview_app', '0010_session_text_completion'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='macro_engine',
            field=models.CharField(choices=[('legacy', 'legacy'), ('v2', 'Macros 2.0 (experimental)')], default='legacy', help_text="SillyTavern's macro engine for this chat's requests: the legacy one or Macros 2.0 (power_user.experimental_macro_engine)", max_length=6),
        ),
        migrations.AddField(
            model_name='session',
            name='global_variables',
            field=models.JSONField(blank=True, default=dict, help_text="SillyTavern's global macro variables (extension_settings.variables.global) as they stand before the next generation; the chat's own variables live in chat_file's metadata (chat_metadata.variables), as SillyTavern keeps them"),
        ),
    ]
