% Ridge-regression PML baseline for GNU Octave / MATLAB, driven by pmlbench's external adapter.
% Usage: octave-cli --no-gui --norc --quiet ridge.m TRAIN.mat TEST.mat OUT.mat
% W = argmin ||[1 X] W - Y||^2 + lam ||W without its bias row||^2; scores = [1 Xtest] W.
args = argv();
train = load(args{1});
test = load(args{2});
X = full(double(train.X));
Y = double(train.Y);
lam = double(train.param_lam);
Xt = full(double(test.X));
X1 = [ones(rows(X), 1), X];
Xt1 = [ones(rows(Xt), 1), Xt];
P = lam * eye(columns(X1));
P(1, 1) = 0;
W = (X1' * X1 + P) \ (X1' * Y);
scores = Xt1 * W;
labels = double(scores >= 0.5);
save('-v7', args{3}, 'scores', 'labels');
