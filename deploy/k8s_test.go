package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
)

// The files checked, and the chart version they were written against: the vendored chart values are
// testdata/nats-chart-<version>-values.yaml.
const (
	natsValuesFile = "k8s/nats-values.yaml"
	agentrtFile    = "k8s/agentrt.yaml"
	scaleOutDoc    = "../docs/scale-out.md"
	chartVersion   = "2.14.2"
)

func chartValuesFile() string { return "testdata/nats-chart-" + chartVersion + "-values.yaml" }

// TestKubernetesFiles checks the NATS values and the agentrt manifest as committed: every values key is one the
// chart has, the manifest's runtime.toml loads with agentrt's config loader and points at the NATS service the
// values make, and the Deployment, Service and probes agree with that runtime.toml.
func TestKubernetesFiles(t *testing.T) {
	values, manifest, chart := read(t, natsValuesFile), read(t, agentrtFile), read(t, chartValuesFile())
	if err := check(t, values, manifest, chart); err != nil {
		t.Fatal(err)
	}
}

// TestKubernetesCheckCatches changes the committed files one way each and expects the check to refuse every
// change, naming what is wrong: the check is not one that passes whatever the files say.
func TestKubernetesCheckCatches(t *testing.T) {
	values, manifest, chart := read(t, natsValuesFile), read(t, agentrtFile), read(t, chartValuesFile())
	cases := []struct {
		name     string
		file     string // "values" or "manifest"
		old, new string
		want     string
	}{
		{"bad runtime.toml key", "manifest", `    mode = "external"`, `    mood = "external"`, "unknown key"},
		{"bad runtime.toml value", "manifest", `    ack_wait = "30s"`, `    ack_wait = "0s"`, "bus.ack_wait"},
		{"bus URL names another service", "manifest", `url = "nats://nats:4222"`, `url = "nats://nats-cluster:4222"`, "nats-cluster"},
		{"bus URL on another port", "manifest", `url = "nats://nats:4222"`, `url = "nats://nats:4223"`, "port 4223"},
		{"bus not external", "manifest", `    mode = "external"` + "              # the NATS", `    mode = "embedded"` + "              # the NATS", "embedded mode"},
		{"replicas above the NATS servers", "manifest", `    replicas = 3   `, `    replicas = 5   `, "replicas"},
		{"payload above the NATS limit", "values", `max_payload: << 8MB >>`, `max_payload: << 1MB >>`, "max_payload"},
		{"values key the chart lacks", "values", "        size: 50Gi", "        sise: 50Gi", "config.jetstream.fileStore.pvc.sise"},
		{"values scalar where the chart has a map", "values", "    memoryStore:\n      enabled: false", "    memoryStore: false", "config.jetstream.memoryStore"},
		{"service name not pinned", "values", "fullnameOverride: nats\n", "", "fullnameOverride"},
		{"jetstream off", "values", "  jetstream:\n    enabled: true", "  jetstream:\n    enabled: false", "jetstream"},
		{"config map not mounted", "manifest", "            name: agentrt-config", "            name: agentrt-conf", "agentrt-config"},
		{"grace shorter than shutdown_grace", "manifest", "terminationGracePeriodSeconds: 45", "terminationGracePeriodSeconds: 20", "shutdown_grace"},
		{"probe on a path serve lacks", "manifest", "              path: /readyz", "              path: /ready", "/ready"},
		{"container port not server.addr's", "manifest", "              containerPort: 8080", "              containerPort: 8081", "8080"},
		{"no token for a non-loopback addr", "manifest", "            - name: AGENTRT_TOKEN", "            - name: AGENTRT_TOKN", "AGENTRT_TOKEN"},
		{"spool on the read-only root", "manifest", `spool_dir = "/var/cache/agentrt/spool"`, `spool_dir = "/var/lib/agentrt/spool"`, "server.spool_dir"},
		{"too few claims for the pods", "manifest", "max_ack_pending = 20000", "max_ack_pending = 500", "max_ack_pending"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, m := values, manifest
			target := &m
			if c.file == "values" {
				target = &v
			}
			if strings.Count(*target, c.old) != 1 {
				t.Fatalf("the %s file holds %q %d times, want once: update this case", c.file, c.old, strings.Count(*target, c.old))
			}
			*target = strings.Replace(*target, c.old, c.new, 1)
			err := check(t, v, m, chart)
			if err == nil {
				t.Fatalf("the check accepted the change %q -> %q", c.old, c.new)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the check refused the change %q -> %q, but its error does not name %q:\n%v", c.old, c.new, c.want, err)
			}
		})
	}
}

// TestChartVersionNamedEverywhere: the helm install lines of the values file, the manifest and docs/scale-out.md
// pin the chart version whose values.yaml the check reads.
func TestChartVersionNamedEverywhere(t *testing.T) {
	re := regexp.MustCompile(`helm (?:upgrade --)?install [^\n]*nats/nats --version (\S+)`)
	for _, f := range []string{natsValuesFile, agentrtFile, scaleOutDoc} {
		found := re.FindAllStringSubmatch(read(t, f), -1)
		if len(found) == 0 {
			t.Errorf("%s: no `helm install ... nats/nats --version X` line", f)
		}
		for _, m := range found {
			if m[1] != chartVersion {
				t.Errorf("%s: helm install pins chart version %s; the check reads the values of %s (%s)", f, m[1], chartVersion, chartValuesFile())
			}
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// natsFacts is what the agentrt manifest must agree with, taken from the values over the chart's defaults.
type natsFacts struct {
	service    string // the client Service's name
	port       int    // its client port
	servers    int    // config.cluster.replicas
	maxPayload int64  // nats.conf max_payload in bytes
}

// check runs every check on the three texts; the error lists each finding.
func check(t *testing.T, values, manifest, chart string) error {
	var errs []error
	nats, err := checkValues(values, chart)
	if err != nil {
		return err
	}
	if err := checkManifest(t, manifest, nats); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkValues checks the values against the chart's values.yaml and returns what agentrt must agree with.
func checkValues(values, chart string) (natsFacts, error) {
	var v, c map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		return natsFacts{}, fmt.Errorf("%s: %w", natsValuesFile, err)
	}
	if err := yaml.Unmarshal([]byte(chart), &c); err != nil {
		return natsFacts{}, fmt.Errorf("%s: %w", chartValuesFile(), err)
	}
	var errs []error
	errs = append(errs, knownKeys(v, c, "")...)
	// get reads a path from the values, else the chart's default.
	get := func(path string) any {
		if x, ok := lookup(v, path); ok {
			return x
		}
		x, _ := lookup(c, path)
		return x
	}
	for _, p := range []string{"config.cluster.enabled", "config.jetstream.enabled", "config.jetstream.fileStore.enabled", "config.jetstream.fileStore.pvc.enabled", "service.enabled"} {
		if get(p) != true {
			errs = append(errs, fmt.Errorf("%s: %s must be true (agentrt needs a clustered JetStream with file storage on volumes, reached through the chart's Service)", natsValuesFile, p))
		}
	}
	var f natsFacts
	// The Service is service.name, else the chart's full name: fullnameOverride. Without either it depends on the
	// release name, which the manifest cannot know.
	if s, _ := get("service.name").(string); s != "" {
		f.service = s
	} else if s, _ := get("fullnameOverride").(string); s != "" {
		f.service = s
	} else {
		errs = append(errs, fmt.Errorf("%s: neither service.name nor fullnameOverride is set: the NATS Service's name would depend on the release name", natsValuesFile))
	}
	f.port, _ = get("config.nats.port").(int)
	f.servers, _ = get("config.cluster.replicas").(int)
	if f.servers < 3 {
		errs = append(errs, fmt.Errorf("%s: config.cluster.replicas = %v: a JetStream cluster that survives a server's death needs 3", natsValuesFile, get("config.cluster.replicas")))
	}
	f.maxPayload = 1 << 20 // nats-server's default
	if p := get("config.merge.max_payload"); p != nil {
		n, err := natsSize(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: config.merge.max_payload: %w", natsValuesFile, err))
		}
		f.maxPayload = n
	}
	return f, errors.Join(errs...)
}

// knownKeys reports each key of v that the chart's values c do not have. Below a key whose chart default is an
// empty map or nothing (merge, env, resources, topologySpreadConstraints), keys are free-form.
func knownKeys(v, c map[string]any, at string) []error {
	var errs []error
	for k, x := range v {
		path := strings.TrimPrefix(at+"."+k, ".")
		def, ok := c[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s is not a key of the chart's values (%s)", natsValuesFile, path, chartValuesFile()))
			continue
		}
		dm, defIsMap := def.(map[string]any)
		xm, isMap := x.(map[string]any)
		switch {
		case defIsMap && len(dm) > 0 && !isMap:
			errs = append(errs, fmt.Errorf("%s: %s is a %T; the chart has a table there", natsValuesFile, path, x))
		case defIsMap && len(dm) > 0:
			errs = append(errs, knownKeys(xm, dm, path)...)
		case def != nil && !defIsMap && isMap:
			errs = append(errs, fmt.Errorf("%s: %s is a table; the chart has a %T there", natsValuesFile, path, def))
		}
	}
	return errs
}

func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// natsSize reads a nats.conf size as the chart writes it: a number, or "<< 8MB >>" (NATS's units: k, m, g are
// powers of 1000; kb, mb, gb powers of 1024, conf/parse.go).
func natsSize(x any) (int64, error) {
	if n, ok := x.(int); ok {
		return int64(n), nil
	}
	s, ok := x.(string)
	if !ok {
		return 0, fmt.Errorf("%v: want a number or \"<< 8MB >>\"", x)
	}
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<<"), ">>"))
	m := regexp.MustCompile(`^(\d+)\s*([a-zA-Z]*)$`).FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q: want a number with an optional unit", s)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	mult := map[string]int64{"": 1, "k": 1e3, "kb": 1 << 10, "m": 1e6, "mb": 1 << 20, "g": 1e9, "gb": 1 << 30}[strings.ToLower(m[2])]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q", s, m[2])
	}
	return n * mult, nil
}

// The parts of the manifest the check reads (the Kubernetes API's own schema is checked by
// scripts/test.d/80-k8s-manifests.sh with the official Python client's models).
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas *int           `yaml:"replicas"`
		Selector map[string]any `yaml:"selector"` // Deployment: matchLabels; Service: the labels
		Ports    []servicePort  `yaml:"ports"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				Volumes                       []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					EmptyDir any `yaml:"emptyDir"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort any    `yaml:"targetPort"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional bool   `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	StartupProbe    *probe `yaml:"startupProbe"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	SecurityContext *struct {
		ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// checkManifest checks the agentrt manifest against agentrt's config loader and the NATS facts.
func checkManifest(t *testing.T, manifest string, nats natsFacts) error {
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	byKind := map[string][]object{}
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return fmt.Errorf("%s: %w", agentrtFile, err)
		}
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	one := func(kind string) (object, error) {
		if n := len(byKind[kind]); n != 1 {
			return object{}, fmt.Errorf("%s: %d %s documents, want 1", agentrtFile, n, kind)
		}
		return byKind[kind][0], nil
	}
	cm, err := one("ConfigMap")
	if err != nil {
		return err
	}
	src, ok := cm.Data["runtime.toml"]
	if !ok {
		return fmt.Errorf("%s: ConfigMap %s has no runtime.toml", agentrtFile, cm.Metadata.Name)
	}
	// agentrt's own loader, on the file as the pod reads it (in a folder of its own, so relative paths and
	// model folders resolve against nothing of this repository).
	path := filepath.Join(t.TempDir(), "runtime.toml")
	cfg, err := config.Parse(path, src)
	if err != nil {
		return fmt.Errorf("%s: ConfigMap %s runtime.toml: %w", agentrtFile, cm.Metadata.Name, err)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(agentrtFile+": "+format, a...)) }

	// The bus: external, at the values' Service and port, within its servers and payload limit.
	if cfg.Bus.Mode != bus.ModeExternal {
		bad("runtime.toml bus.mode = %q, want %q (the NATS cluster of %s)", cfg.Bus.Mode, bus.ModeExternal, natsValuesFile)
	}
	for _, u := range strings.Split(cfg.Bus.URL, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			bad("runtime.toml bus.url %q: %v", u, err)
			continue
		}
		host := pu.Hostname()
		if first, _, _ := strings.Cut(host, "."); first != nats.service || (host != first && !strings.HasSuffix(host, ".svc") && !strings.HasSuffix(host, ".svc.cluster.local")) {
			bad("runtime.toml bus.url %q: host %q is not the NATS Service %q of %s (nor %s.NAMESPACE.svc)", u, host, nats.service, natsValuesFile, nats.service)
		}
		if p, _ := strconv.Atoi(pu.Port()); p != nats.port {
			bad("runtime.toml bus.url %q: port %d, the NATS Service's client port is %d", u, p, nats.port)
		}
	}
	replicas := cfg.Bus.Replicas
	if replicas == 0 {
		replicas = 3 // Config.replicas' default outside embedded mode
	}
	if replicas > nats.servers {
		bad("runtime.toml bus.replicas = %d, but %s runs %d NATS servers", replicas, natsValuesFile, nats.servers)
	}
	if int64(cfg.Bus.MaxPayload) > nats.maxPayload {
		bad("runtime.toml bus.max_payload = %d is above the NATS servers' max_payload (%d bytes, config.merge.max_payload in %s): a trajectory between the two is refused", cfg.Bus.MaxPayload, nats.maxPayload, natsValuesFile)
	}

	dep, err := one("Deployment")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	svc, err := one("Service")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return errors.Join(append(errs, fmt.Errorf("%s: the Deployment has %d containers, want 1", agentrtFile, len(pod.Containers)))...)
	}
	c := pod.Containers[0]
	pods := 1
	if dep.Spec.Replicas != nil {
		pods = *dep.Spec.Replicas
	}
	if want := pods * cfg.Server.Concurrency; cfg.Bus.MaxAckPending < want {
		bad("runtime.toml bus.max_ack_pending = %d is below %d pods x server.concurrency %d: pods would sit with free slots", cfg.Bus.MaxAckPending, pods, cfg.Server.Concurrency)
	}

	// The container reads the ConfigMap's runtime.toml where it is mounted.
	mounts := map[string]string{} // volume name -> mount path
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	cfgPath := ""
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name && mounts[v.Name] != "" {
			cfgPath = mounts[v.Name] + "/runtime.toml"
		}
	}
	if cfgPath == "" {
		bad("the Deployment mounts no volume of ConfigMap %s", cm.Metadata.Name)
	} else if !slices.Equal(c.Args, []string{"serve", cfgPath}) {
		bad("the container's args are %q, want [serve %s]", c.Args, cfgPath)
	}
	// What agentrt writes lies on a writable volume when the root file system is read-only.
	if c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem {
		writable := func(p string) bool {
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly && (p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/")) {
					return true
				}
			}
			return false
		}
		for key, p := range map[string]string{"server.spool_dir": cfg.Server.SpoolDir, "plugins.cache_dir": cfg.Plugins.CacheDir} {
			if !writable(p) {
				bad("runtime.toml %s = %q is on the read-only root file system (no writable volume mounted there)", key, p)
			}
		}
		for _, e := range c.Env {
			if e.Name == "HF_HOME" && !writable(e.Value) {
				bad("HF_HOME = %q is on the read-only root file system", e.Value)
			}
		}
	}

	// server.addr's port is the container's port, the probes' and the Service's target.
	_, portStr, err := net.SplitHostPort(cfg.Server.Addr)
	port, _ := strconv.Atoi(portStr)
	if err != nil || port == 0 {
		bad("runtime.toml server.addr %q: want host:port with a fixed port", cfg.Server.Addr)
	}
	named := map[string]int{}
	found := false
	for _, p := range c.Ports {
		named[p.Name] = p.ContainerPort
		found = found || p.ContainerPort == port
	}
	if !found {
		bad("no containerPort is server.addr's port %d", port)
	}
	resolve := func(p any) int {
		switch p := p.(type) {
		case int:
			return p
		case string:
			return named[p]
		}
		return 0
	}
	for _, pr := range []struct {
		name  string
		p     *probe
		paths []string
	}{
		{"startupProbe", c.StartupProbe, []string{"/healthz"}},
		{"livenessProbe", c.LivenessProbe, []string{"/healthz"}},
		{"readinessProbe", c.ReadinessProbe, []string{"/readyz", "/healthz"}},
	} {
		switch {
		case pr.p == nil || pr.p.HTTPGet == nil:
			bad("the container has no %s with httpGet", pr.name)
		case !slices.Contains(pr.paths, pr.p.HTTPGet.Path):
			bad("%s probes %s; agentrt serve answers %s there (cmd/agentrt serve --help)", pr.name, pr.p.HTTPGet.Path, strings.Join(pr.paths, " or "))
		case resolve(pr.p.HTTPGet.Port) != port:
			bad("%s probes port %v, not server.addr's %d", pr.name, pr.p.HTTPGet.Port, port)
		}
	}
	if len(svc.Spec.Ports) == 0 || resolve(svc.Spec.Ports[0].TargetPort) != port {
		bad("the Service does not target server.addr's port %d", port)
	}
	podLabels := dep.Spec.Template.Metadata.Labels
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			bad("the Service selects %s=%v, which the pods do not carry", k, v)
		}
	}

	// serve refuses a non-loopback addr without a token: the token comes from $AGENTRT_TOKEN, from a Secret.
	if cfg.Server.Token == "" {
		ok := false
		for _, e := range c.Env {
			if e.Name == "AGENTRT_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !e.ValueFrom.SecretKeyRef.Optional {
				ok = true
			}
		}
		if !ok {
			bad("runtime.toml server.token is empty and the container sets no AGENTRT_TOKEN from a Secret: serve refuses %s without a token", cfg.Server.Addr)
		}
	}
	// Kubernetes kills the pod terminationGracePeriodSeconds after SIGTERM; serve needs shutdown_grace and then
	// a moment to hand the rest back to the bus.
	grace := 30 * time.Second // the Kubernetes default
	if s := pod.TerminationGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	if grace <= cfg.Server.ShutdownGrace {
		bad("terminationGracePeriodSeconds (%s) is not longer than runtime.toml server.shutdown_grace (%s)", grace, cfg.Server.ShutdownGrace)
	}
	return errors.Join(errs...)
}

// renderedFile is what the chart renders from the values (helm template; its header says how to make it again).
func renderedFile() string { return "testdata/nats-chart-" + chartVersion + "-rendered.yaml" }

// TestRenderedNATSConfig loads the nats.conf the chart renders from the values with nats-server's own config
// parser, and checks that the servers it configures are the ones the agentrt manifest expects: JetStream on a file
// store, the cluster's routes, max_payload, and the Service's name and client port.
func TestRenderedNATSConfig(t *testing.T) {
	values, rendered := read(t, natsValuesFile), read(t, renderedFile())
	sum := sha256.Sum256([]byte(values))
	if m := regexp.MustCompile(`sha256 ([0-9a-f]{64})`).FindStringSubmatch(rendered); m == nil || m[1] != hex.EncodeToString(sum[:]) {
		t.Fatalf("%s was rendered from another %s (its sha256 is %x): render it again as its header says", renderedFile(), natsValuesFile, sum)
	}
	nats, err := checkValues(values, read(t, chartValuesFile()))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(rendered))
	var conf string
	var svcOK bool
	var sts object
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", renderedFile(), err)
		}
		switch o.Kind {
		case "ConfigMap":
			conf = o.Data["nats.conf"]
		case "Service":
			for _, p := range o.Spec.Ports {
				svcOK = svcOK || (o.Metadata.Name == nats.service && p.Name == "nats" && p.Port == nats.port)
			}
		case "StatefulSet":
			sts = o
		}
	}
	if !svcOK {
		t.Errorf("%s: no Service %q with port nats = %d (what the agentrt manifest's bus.url is checked against)", renderedFile(), nats.service, nats.port)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != nats.servers {
		t.Errorf("%s: the StatefulSet runs %v servers, want %d", renderedFile(), sts.Spec.Replicas, nats.servers)
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVER_NAME", "nats-0") // the chart sets it from the pod's name
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the rendered nats.conf: %v\n%s", err, conf)
	}
	if !opts.JetStream || opts.StoreDir == "" || opts.JetStreamMaxStore <= 0 || opts.JetStreamMaxMemory != 0 {
		t.Errorf("rendered nats.conf: jetstream %v, store_dir %q, max_file_store %d, max_memory_store %d: want JetStream on a file store only",
			opts.JetStream, opts.StoreDir, opts.JetStreamMaxStore, opts.JetStreamMaxMemory)
	}
	if len(opts.Routes) != nats.servers || opts.Cluster.Port == 0 {
		t.Errorf("rendered nats.conf: %d routes, cluster port %d: want a route to each of %d servers", len(opts.Routes), opts.Cluster.Port, nats.servers)
	}
	if int64(opts.MaxPayload) != nats.maxPayload || opts.Port != nats.port {
		t.Errorf("rendered nats.conf: max_payload %d, port %d; the values say %d and %d", opts.MaxPayload, opts.Port, nats.maxPayload, nats.port)
	}
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "runtime.toml"), configMapTOML(t, read(t, agentrtFile)))
	if err != nil {
		t.Fatal(err)
	}
	if int64(cfg.Bus.MaxPayload) > int64(opts.MaxPayload) {
		t.Errorf("the agentrt manifest's bus.max_payload %d is above the rendered servers' max_payload %d", cfg.Bus.MaxPayload, opts.MaxPayload)
	}
}

// configMapTOML returns the runtime.toml of the manifest's ConfigMap.
func configMapTOML(t *testing.T, manifest string) string {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("%s: no ConfigMap with runtime.toml (%v)", agentrtFile, err)
		}
		if s, ok := o.Data["runtime.toml"]; o.Kind == "ConfigMap" && ok {
			return s
		}
	}
}
