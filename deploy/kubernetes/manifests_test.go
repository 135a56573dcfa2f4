package kubernetes

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/mailbench/mailbench/workload"
)

// objects are the rendered objects, by kind and name.
type objects struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	services   map[string]*corev1.Service
	jobs       map[string]*batchv1.Job
}

// render builds the kustomization as `kubectl apply -k` would, from the
// files here plus a token, after edit (nil: none) changes them, and
// decodes every object strictly into its k8s.io/api type: an unknown or
// misspelt field, a wrong type or a kind these manifests do not use fails.
func render(t *testing.T, edit func(files map[string]string)) (objects, error) {
	t.Helper()
	files := map[string]string{"token": "test-token-of-enough-bytes\n"}
	err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Files, p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(files)
	}
	mem := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := mem.WriteFile("/app/"+name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/app")
	if err != nil {
		return objects{}, err
	}
	o := objects{map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}, map[string]*corev1.Service{}, map[string]*batchv1.Job{}}
	for _, r := range rm.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("%s %s", r.GetKind(), r.GetName())
		switch r.GetApiVersion() + " " + r.GetKind() {
		case "v1 ConfigMap":
			v := &corev1.ConfigMap{}
			err, o.configMaps[r.GetName()] = yaml.UnmarshalStrict(doc, v), v
		case "v1 Secret":
			v := &corev1.Secret{}
			err, o.secrets[r.GetName()] = yaml.UnmarshalStrict(doc, v), v
		case "v1 Service":
			v := &corev1.Service{}
			err, o.services[r.GetName()] = yaml.UnmarshalStrict(doc, v), v
		case "batch/v1 Job":
			v := &batchv1.Job{}
			err, o.jobs[r.GetName()] = yaml.UnmarshalStrict(doc, v), v
		default:
			t.Fatalf("%s: %s is not a kind these manifests use", where, r.GetApiVersion())
		}
		if err != nil {
			return objects{}, fmt.Errorf("%s: %w", where, err)
		}
	}
	return o, nil
}

func TestStrictDecodingCatchesAMisspeltField(t *testing.T) {
	_, err := render(t, func(f map[string]string) {
		f["generators.yaml"] = strings.Replace(f["generators.yaml"], "  completions: 3", "  completions: 3\n  completion: 4", 1)
	})
	// kustomize passes an unknown field through; the strict decoding
	// must refuse it.
	if err == nil || !strings.Contains(err.Error(), `unknown field "completion"`) {
		t.Fatalf("a Job with spec.completion (for completions): %v", err)
	}
}

// TestKustomizationFitsTogether checks what a schema cannot: N is set once
// (the generators Job's completions) and reaches its parallelism and the
// manager's --generators; the generators are Indexed, never retried, and
// find the manager's Service; the Service selects the manager's pod and
// targets ports it exposes, the sink's among them on the workload's
// sink.listen port; every ConfigMap and Secret a pod mounts is generated;
// every pod runs as non-root; the workload is a valid config for a managed
// run.
func TestKustomizationFitsTogether(t *testing.T) {
	o, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.jobs) != 2 || len(o.services) != 1 || len(o.configMaps) != 1 || len(o.secrets) != 1 {
		t.Fatalf("want 2 Jobs, a Service, a ConfigMap and a Secret; have %d, %d, %d, %d", len(o.jobs), len(o.services), len(o.configMaps), len(o.secrets))
	}
	gens, mgr := o.jobs["mailbench-generators"], o.jobs["mailbench-manager"]
	if gens == nil || mgr == nil {
		t.Fatal("want Jobs mailbench-generators and mailbench-manager")
	}
	gs := gens.Spec
	if gs.CompletionMode == nil || *gs.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("the generators Job is not Indexed: JOB_COMPLETION_INDEX would be unset")
	}
	if gs.Completions == nil || gs.Parallelism == nil || *gs.Completions != *gs.Parallelism {
		t.Fatal("generators: completions and parallelism must be set and equal (all run at once)")
	}
	n := int(*gs.Completions)
	margs := mgr.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(margs, fmt.Sprintf("--generators=%d", n)) {
		t.Errorf("manager args %q: want --generators=%d", margs, n)
	}
	for name, j := range o.jobs {
		if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
			t.Errorf("%s: a retry would be another run; want restartPolicy Never and backoffLimit 0", name)
		}
	}
	svc := o.services["mailbench-manager"]
	if svc == nil {
		t.Fatal("no Service mailbench-manager")
	}
	gargs := gs.Template.Spec.Containers[0].Args
	if !slices.Contains(gargs, "--manager=mailbench-manager:7070") {
		t.Errorf("generator args %q do not name the manager's Service", gargs)
	}
	for k, v := range svc.Spec.Selector {
		if mgr.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the manager's pod", k, v)
		}
	}
	ports := map[string]int32{}
	for _, p := range mgr.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s targets %s, which the manager does not expose", p.Name, p.TargetPort.String())
		}
	}
	if !slices.Contains(margs, fmt.Sprintf("--manager-listen=0.0.0.0:%d", ports["http"])) {
		t.Errorf("the manager does not listen on its http port %d: %q", ports["http"], margs)
	}

	// Every mounted ConfigMap and Secret is one the kustomization made
	// (with its hash suffix), and the token is where --token-file reads.
	for name, j := range o.jobs {
		ps := j.Spec.Template.Spec
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: runAsNonRoot not set", name)
		}
		mounts := map[string]string{}
		for _, m := range ps.Containers[0].VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		for _, v := range ps.Volumes {
			switch {
			case v.ConfigMap != nil:
				if o.configMaps[v.ConfigMap.Name] == nil {
					t.Errorf("%s: volume %s: no ConfigMap %s", name, v.Name, v.ConfigMap.Name)
				}
				if !slices.Contains(ps.Containers[0].Args, mounts[v.Name]+"/workload.toml") {
					t.Errorf("%s: the workload is mounted at %s, not read from there", name, mounts[v.Name])
				}
			case v.Secret != nil:
				if s := o.secrets[v.Secret.SecretName]; s == nil || len(s.Data["token"]) == 0 {
					t.Errorf("%s: volume %s: no Secret %s with a token", name, v.Name, v.Secret.SecretName)
				}
				if !slices.Contains(ps.Containers[0].Args, "--token-file="+mounts[v.Name]+"/token") {
					t.Errorf("%s: the token is mounted at %s, not read from there", name, mounts[v.Name])
				}
			}
		}
	}

	var data string
	for _, cm := range o.configMaps {
		data = cm.Data["workload.toml"]
	}
	cfg, err := workload.ParseConfig("workload.toml", []byte(data))
	if err != nil {
		t.Fatalf("the workload ConfigMap: %v", err)
	}
	if cfg.Target.Embedded {
		t.Error("the workload runs the embedded target: each generator would load its own")
	}
	if !cfg.Sink.Enabled || !strings.HasSuffix(cfg.Sink.Listen, fmt.Sprintf(":%d", ports["smtp-sink"])) || strings.HasPrefix(cfg.Sink.Listen, "127.") {
		t.Errorf("sink.listen %q: the manager's sink must listen on the pod's port %d, not on loopback", cfg.Sink.Listen, ports["smtp-sink"])
	}
	if cfg.Users.Count < n {
		t.Errorf("%d users for %d generators: every shard needs users", cfg.Users.Count, n)
	}
}

// TestNIsSetOnce: changing the generators Job's completions alone changes
// the run's N everywhere.
func TestNIsSetOnce(t *testing.T) {
	o, err := render(t, func(f map[string]string) {
		f["generators.yaml"] = strings.Replace(f["generators.yaml"], "completions: 3", "completions: 7", 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	gs := o.jobs["mailbench-generators"].Spec
	if *gs.Completions != 7 || *gs.Parallelism != 7 || !slices.Contains(o.jobs["mailbench-manager"].Spec.Template.Spec.Containers[0].Args, "--generators=7") {
		t.Errorf("completions 7: parallelism %d, manager args %q", *gs.Parallelism, o.jobs["mailbench-manager"].Spec.Template.Spec.Containers[0].Args)
	}
}

// TestNoTokenNoRun: without the token file the kustomization does not
// build (no run with a default token).
func TestNoTokenNoRun(t *testing.T) {
	if _, err := render(t, func(f map[string]string) { delete(f, "token") }); err == nil {
		t.Error("the kustomization built without a token")
	}
}

// withComponents turns on the optional components in kustomization.yaml.
func withComponents(names ...string) func(map[string]string) {
	return func(f map[string]string) {
		list := "components:\n"
		for _, n := range names {
			list += "  - components/" + n + "\n"
		}
		f["kustomization.yaml"] = strings.Replace(f["kustomization.yaml"], "# components:\n#   - components/init\n#   - components/sink-external\n", list, 1)
	}
}

// TestImagesOverride: one images: entry names the image of every
// container, the init container's among them.
func TestImagesOverride(t *testing.T) {
	o, err := render(t, func(f map[string]string) {
		withComponents("init")(f)
		f["kustomization.yaml"] = strings.Replace(f["kustomization.yaml"], "    newName: mailbench\n    newTag: dev", "    newName: registry.example/mailbench\n    newTag: \"0.4\"", 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, j := range o.jobs {
		for _, c := range append(j.Spec.Template.Spec.InitContainers, j.Spec.Template.Spec.Containers...) {
			n++
			if c.Image != "registry.example/mailbench:0.4" {
				t.Errorf("%s/%s: image %q", name, c.Name, c.Image)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d containers, want manager, init and generator", n)
	}
}

// TestInitComponent: the manager's pod runs init on the workload it
// mounts before the manager; the manager prints its report into the log.
func TestInitComponent(t *testing.T) {
	o, err := render(t, withComponents("init"))
	if err != nil {
		t.Fatal(err)
	}
	ps := o.jobs["mailbench-manager"].Spec.Template.Spec
	if len(ps.InitContainers) != 1 {
		t.Fatalf("%d init containers", len(ps.InitContainers))
	}
	ic := ps.InitContainers[0]
	if !slices.Equal(ic.Args, []string{"init", "/etc/mailbench/workload.toml"}) || len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].MountPath != "/etc/mailbench" {
		t.Errorf("init container %+v", ic)
	}
	if ic.SecurityContext == nil || ic.SecurityContext.ReadOnlyRootFilesystem == nil || !*ic.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("init container: root filesystem not read-only")
	}
	if !slices.Contains(ps.Containers[0].Args, "--report-in-log") {
		t.Error("the manager does not print its JSON report into the log")
	}
	if o2, err := render(t, nil); err != nil || len(o2.jobs["mailbench-manager"].Spec.Template.Spec.InitContainers) != 0 {
		t.Errorf("without the component: %v, init containers present", err)
	}
}

// TestSinkExternalComponent: a LoadBalancer Service reaches the
// manager's sink port.
func TestSinkExternalComponent(t *testing.T) {
	o, err := render(t, withComponents("sink-external"))
	if err != nil {
		t.Fatal(err)
	}
	svc := o.services["mailbench-sink-external"]
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "smtp-sink" {
		t.Fatalf("service %+v", svc)
	}
	mgr := o.jobs["mailbench-manager"]
	for k, v := range svc.Spec.Selector {
		if mgr.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not select the manager", k, v)
		}
	}
}

// TestApplyNeedsTheToken: the apply script refuses to run without the
// token, saying how to make one, and runs kubectl apply -k with it.
func TestApplyNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	script, err := fs.ReadFile(Files, "apply")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "apply"), script, 0o755)
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\necho kubectl \"$@\"\n"), 0o755)
	run := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(dir, "apply"))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "token is missing or empty") || !strings.Contains(out, "head -c 32 /dev/urandom | base64 >") {
		t.Errorf("without a token: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "token"), []byte("t0ken\n"), 0o600)
	if out, err := run(); err != nil || strings.TrimSpace(out) != "kubectl apply -k "+dir {
		t.Errorf("with a token: %v\n%s", err, out)
	}
}
