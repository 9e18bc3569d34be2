"""The grid helpers of fit_grid hooks: one independent estimator per point, groups in order."""

from __future__ import annotations

from sklearn.linear_model import Ridge

from pmlbench.numerics.gridpoints import groups_by, point_models


def test_point_models_are_independent_clones_with_each_points_values():
    base = Ridge(alpha=1.0, fit_intercept=True)
    models = point_models(base, [{"alpha": 0.1}, {"alpha": 10.0, "fit_intercept": False}])
    assert [m.alpha for m in models] == [0.1, 10.0]
    assert [m.fit_intercept for m in models] == [True, False]
    assert all(m is not base for m in models) and models[0] is not models[1]
    assert base.alpha == 1.0  # the template is left as it was


def test_groups_follow_first_members_and_keep_grid_order_inside():
    points = [
        {"alpha": 1.0, "fit_intercept": False},
        {"alpha": 2.0, "fit_intercept": True},
        {"alpha": 3.0, "fit_intercept": False},
        {"alpha": 4.0, "fit_intercept": True},
    ]
    models = point_models(Ridge(), points)
    groups = groups_by(models, ["fit_intercept"])
    assert list(groups.items()) == [((False,), [0, 2]), ((True,), [1, 3])]
    assert groups_by(models, []) == {(): [0, 1, 2, 3]}
