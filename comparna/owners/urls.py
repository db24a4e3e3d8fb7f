"""URLs of method owners' pages, their API and the public feeds; included at the site root."""

from django.urls import path

from comparna.owners import api, feeds, password_reset, submit, views

urlpatterns = [
    path("submit/", submit.SubmitView.as_view(), name="submit-method"),
    path("submit/programs.txt", submit.SandboxProgramsView.as_view(), name="submit-programs"),
    path("account/signup/", views.OwnerSignUpView.as_view(), name="owner-signup"),
    path("account/confirm/<str:token>/", views.OwnerConfirmView.as_view(), name="owner-confirm"),
    path("account/login/", views.OwnerLoginView.as_view(), name="owner-login"),
    path("account/logout/", views.OwnerLogoutView.as_view(), name="owner-logout"),
    path("account/", views.OwnerHomeView.as_view(), name="owner-home"),
    path("account/password-reset/", password_reset.OwnerPasswordResetView.as_view(), name="password_reset"),
    path(
        "account/password-reset/sent/",
        password_reset.OwnerPasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "account/password-reset/<uidb64>/<token>/",
        password_reset.OwnerPasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "account/password-reset/done/",
        password_reset.OwnerPasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("account/methods/new/", views.OwnerMethodFormView.as_view(), name="owner-method-new"),
    path("account/methods/<id:pk>/", views.OwnerMethodView.as_view(), name="owner-method"),
    path("account/methods/<id:pk>/edit/", views.OwnerMethodFormView.as_view(), name="owner-method-edit"),
    path(
        "account/methods/<id:pk>/action/", views.OwnerMethodActionView.as_view(), name="owner-method-action"
    ),
    path("account/methods/<id:pk>/compare/", views.OwnerCompareView.as_view(), name="owner-method-compare"),
    path("account/test-run/<uuid:trial_id>/", views.OwnerTestRunView.as_view(), name="owner-test-run"),
    path("account/tokens/", views.OwnerTokensView.as_view(), name="owner-tokens"),
    path("api/owner/methods/", api.OwnerMethodListView.as_view(), name="owner-api-methods"),
    path("api/owner/methods/<id:pk>/", api.OwnerMethodDetailView.as_view(), name="owner-api-method"),
    path(
        "api/owner/methods/<id:pk>/predictions/",
        api.OwnerPredictionListView.as_view(),
        name="owner-api-predictions",
    ),
    path("api/owner/methods/<id:pk>/scores/", api.OwnerScoreListView.as_view(), name="owner-api-scores"),
    path("api/owner/predictions/", api.OwnerUploadView.as_view(), name="owner-api-upload"),
    path("api/owner/callback/", api.OwnerCallbackView.as_view(), name="owner-api-callback"),
    path("feeds/rankings.atom", feeds.RankingChangesFeed(), name="feed-rankings"),
    path(
        "feeds/rankings/<slug:dataset>.atom", feeds.DatasetRankingChangesFeed(), name="feed-dataset-rankings"
    ),
    path("feeds/methods/<id:pk>.atom", feeds.MethodRankingChangesFeed(), name="feed-method-rankings"),
    path("feeds/targets.atom", feeds.NewTargetsFeed(), name="feed-targets"),
]
