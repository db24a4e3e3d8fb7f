"""Admin of declared training data (issue 15): staff correct or complete what a method version was trained on.

A new declaration opened from the method page (``?version=<pk>``) starts from what the version's catalogue
spec declares, so staff edit rather than retype it.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from comparna.rna.families import by_label
from predictors.models import MethodVersion, TrainingDeclaration
from predictors.training_data import ANY_FAMILY, declaration_from_keys


class TrainingDeclarationForm(forms.ModelForm):
    class Meta:
        model = TrainingDeclaration
        fields = ("version", "declared", "sources", "families", "datasets", "unavailable", "cutoff",
                  "complete", "citation")

    def clean_families(self):
        families = self.cleaned_data["families"] or []
        if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
            raise forms.ValidationError('a JSON list of family labels, e.g. ["tRNA", "5S rRNA"] or ["*"]')
        unknown = [
            f for f in families if f != ANY_FAMILY and by_label(f) is None and not f.startswith("Rfam:")
        ]
        if unknown:
            raise forms.ValidationError(
                f"unknown families {unknown}: use the canonical labels (comparna.rna.families), "
                "'Rfam:<acc>' or '*'"
            )
        return families

    def _slugs(self, name: str) -> list[str]:
        value = self.cleaned_data[name] or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise forms.ValidationError("a JSON list of strings")
        return value

    def clean_datasets(self):
        return self._slugs("datasets")

    def clean_unavailable(self):
        return self._slugs("unavailable")


@admin.register(TrainingDeclaration)
class TrainingDeclarationAdmin(admin.ModelAdmin):
    form = TrainingDeclarationForm
    list_display = ("version", "declared", "families", "datasets", "complete", "updated_at", "updated_by")
    list_filter = ("declared", "complete")
    search_fields = ("version__method__name", "sources")
    raw_id_fields = ("version",)

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        version = MethodVersion.objects.filter(pk=request.GET.get("version") or 0).first()
        if version is not None:
            decl = declaration_from_keys(tuple(version.spec.get("training_data") or ()))
            initial.update(
                version=version.pk, declared=decl.declared,
                sources="\n".join(s["description"] for s in decl.sources),
                families=sorted(decl.families), datasets=list(decl.datasets),
                unavailable=list(decl.unavailable),
                complete=decl.complete, citation=decl.citation,
            )
        return initial

    def save_model(self, request, obj, form, change):
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)
