// Package kubernetes ships the manifests of a sharded mailbench run on
// Kubernetes (docs/distributed.md): the workload ConfigMap, the results
// volume, the sink Deployment and Service, the Indexed Job of shards and
// the merge Job. Its test decodes every manifest strictly into the
// Kubernetes API types (k8s.io/api) and checks that the pieces fit.
package kubernetes

import "embed"

// Manifests are the YAML files of this directory.
//
//go:embed *.yaml
var Manifests embed.FS
