// Package kubernetes ships the kustomization of a managed mailbench run on
// Kubernetes (docs/distributed.md): the manager Job and its Service (HTTP
// for the generators, SMTP for the sink), the Indexed Job of generators,
// the workload ConfigMap and the token Secret, generated from the files
// here. Its test renders the kustomization as `kubectl apply -k` would,
// decodes every object strictly into the Kubernetes API types
// (k8s.io/api) and checks that the pieces fit.
package kubernetes

import "embed"

// Files are the kustomization and what it reads (the token aside: each
// user makes their own).
//
//go:embed kustomization.yaml manager.yaml generators.yaml workload.toml components apply
var Files embed.FS
