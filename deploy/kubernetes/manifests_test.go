package kubernetes

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mailbench/mailbench/workload"
)

// objects are the manifests decoded, by kind and name.
type objects struct {
	configMaps map[string]*corev1.ConfigMap
	pvcs       map[string]*corev1.PersistentVolumeClaim
	services   map[string]*corev1.Service
	deploys    map[string]*appsv1.Deployment
	jobs       map[string]*batchv1.Job
}

// decodeAll decodes every document of every manifest strictly into its
// k8s.io/api type: an unknown or misspelt field, a wrong type or an
// apiVersion/kind that is not one of these fails.
func decodeAll(t *testing.T) objects {
	t.Helper()
	o := objects{map[string]*corev1.ConfigMap{}, map[string]*corev1.PersistentVolumeClaim{}, map[string]*corev1.Service{},
		map[string]*appsv1.Deployment{}, map[string]*batchv1.Job{}}
	files, err := fs.Glob(Manifests, "*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, name := range files {
		data, _ := fs.ReadFile(Manifests, name)
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			where := fmt.Sprintf("%s, document %d", name, i+1)
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var obj interface{ GetName() string }
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1 PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			case "batch/v1 Job":
				obj = &batchv1.Job{}
			default:
				t.Fatalf("%s: %s %s is not a kind these manifests use", where, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if obj.GetName() == "" {
				t.Fatalf("%s: no metadata.name", where)
			}
			switch v := obj.(type) {
			case *corev1.ConfigMap:
				o.configMaps[v.Name] = v
			case *corev1.PersistentVolumeClaim:
				o.pvcs[v.Name] = v
			case *corev1.Service:
				o.services[v.Name] = v
			case *appsv1.Deployment:
				o.deploys[v.Name] = v
			case *batchv1.Job:
				o.jobs[v.Name] = v
			}
		}
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestManifestsDecodeStrictly is the schema check.
func TestManifestsDecodeStrictly(t *testing.T) {
	o := decodeAll(t)
	if len(o.jobs) != 2 || len(o.deploys) != 1 || len(o.services) != 1 || len(o.pvcs) != 1 || len(o.configMaps) != 2 {
		t.Fatalf("want 2 Jobs, a Deployment, a Service, a PVC and 2 ConfigMaps; have %d, %d, %d, %d, %d",
			len(o.jobs), len(o.deploys), len(o.services), len(o.pvcs), len(o.configMaps))
	}
}

func TestStrictDecodingCatchesAMisspeltField(t *testing.T) {
	bad := []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completionMode: Indexed\n  completion: 4\n")
	if err := yaml.UnmarshalStrict(bad, &batchv1.Job{}); err == nil {
		t.Fatal("a Job with spec.completion (for completions) decoded")
	}
}

// TestManifestsFitTogether checks what a schema cannot: the shards Job is
// Indexed with --shard $(JOB_COMPLETION_INDEX)/N for its N completions,
// the merge reads exactly shards 0..N-1 and the sink's file, every
// reference (ConfigMap, key, volume claim, Service port) resolves, every
// container runs as non-root, and the workload is a valid mailbench config
// with enough users and no sink of its own.
func TestManifestsFitTogether(t *testing.T) {
	o := decodeAll(t)
	shards := o.jobs["mailbench-shards"]
	merge := o.jobs["mailbench-merge"]
	if shards == nil || merge == nil {
		t.Fatal("want Jobs mailbench-shards and mailbench-merge")
	}
	sp := shards.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("the shards Job is not Indexed: JOB_COMPLETION_INDEX would be unset")
	}
	if sp.Completions == nil || sp.Parallelism == nil || *sp.Completions != *sp.Parallelism {
		t.Fatal("shards: completions and parallelism must be set and equal (all shards run at once)")
	}
	n := int(*sp.Completions)
	args := sp.Template.Spec.Containers[0].Args
	want := []string{"--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", n)}
	if i := slices.Index(args, "--shard"); i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
		t.Fatalf("shards args %q: want %q", args, want)
	}
	for _, flag := range []string{"--start-at", "--external-sink", "--json", "--no-verdict-exit"} {
		if !slices.Contains(args, flag) {
			t.Errorf("shards args lack %s", flag)
		}
	}
	if sp.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || sp.BackoffLimit == nil || *sp.BackoffLimit != 0 {
		t.Error("shards: a retried shard would replay its arrivals late; want restartPolicy Never and backoffLimit 0")
	}
	var margs []string
	for _, a := range merge.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "/results/shard-") {
			margs = append(margs, a)
		}
	}
	var wantFiles []string
	for i := range n {
		wantFiles = append(wantFiles, fmt.Sprintf("/results/shard-%d.json", i))
	}
	if !slices.Equal(margs, wantFiles) {
		t.Errorf("merge reads %q, want %q", margs, wantFiles)
	}
	if !slices.Contains(args, "/results/shard-$(JOB_COMPLETION_INDEX).json") {
		t.Error("shards do not write /results/shard-$(JOB_COMPLETION_INDEX).json")
	}
	margsAll := merge.Spec.Template.Spec.Containers[0].Args
	if i := slices.Index(margsAll, "--sink"); i < 0 || margsAll[i+1] != "/results/sink.json" {
		t.Error("merge does not reconcile against /results/sink.json")
	}
	sink := o.deploys["mailbench-sink"]
	if sink == nil || !slices.Contains(sink.Spec.Template.Spec.Containers[0].Args, "/results/sink.json") {
		t.Fatal("the sink Deployment does not write /results/sink.json")
	}

	// References resolve.
	pods := map[string]corev1.PodSpec{"shards": sp.Template.Spec, "merge": merge.Spec.Template.Spec, "sink": sink.Spec.Template.Spec}
	for name, ps := range pods {
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: runAsNonRoot not set", name)
		}
		vols := map[string]bool{}
		for _, v := range ps.Volumes {
			vols[v.Name] = true
			if v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("%s: volume %s: no ConfigMap %s", name, v.Name, v.ConfigMap.Name)
			}
			if v.PersistentVolumeClaim != nil && o.pvcs[v.PersistentVolumeClaim.ClaimName] == nil {
				t.Errorf("%s: volume %s: no PersistentVolumeClaim %s", name, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
		for _, c := range ps.Containers {
			for _, m := range c.VolumeMounts {
				if !vols[m.Name] {
					t.Errorf("%s: mount of unknown volume %s", name, m.Name)
				}
			}
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.ConfigMapKeyRef != nil {
					cm := o.configMaps[r.ConfigMapKeyRef.Name]
					if cm == nil || cm.Data[r.ConfigMapKeyRef.Key] == "" {
						t.Errorf("%s: env %s: no ConfigMap key %s/%s", name, e.Name, r.ConfigMapKeyRef.Name, r.ConfigMapKeyRef.Key)
					}
				}
			}
		}
	}
	if _, err := time.Parse(time.RFC3339, o.configMaps["mailbench-run"].Data["start-at"]); err != nil {
		t.Errorf("mailbench-run start-at: %v", err)
	}
	svc := o.services["mailbench-sink"]
	if svc == nil {
		t.Fatal("no Service mailbench-sink")
	}
	for k, v := range svc.Spec.Selector {
		if sink.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the sink's pods", k, v)
		}
	}
	ports := map[string]bool{}
	for _, p := range sink.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	for _, p := range svc.Spec.Ports {
		if !ports[p.TargetPort.String()] {
			t.Errorf("Service port %s targets %s, which the sink does not expose", p.Name, p.TargetPort.String())
		}
	}

	// The workload is a valid config for a sharded run.
	data := o.configMaps["mailbench-workload"].Data["workload.toml"]
	cfg, err := workload.ParseConfig("workload.toml", []byte(data))
	if err != nil {
		t.Fatalf("the workload ConfigMap: %v", err)
	}
	if cfg.Sink.Enabled {
		t.Error("the workload enables a sink of its own; the shards use the sink Service")
	}
	if cfg.Users.Count < n {
		t.Errorf("%d users for %d shards: every shard needs users", cfg.Users.Count, n)
	}
}
