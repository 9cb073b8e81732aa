// Package deploy holds agentrt's deployment files (k8s/: the values for the official NATS Helm chart and the
// agentrt manifest; Dockerfile; grafana/). It has no code: its test checks that the files agree with each other and
// with agentrt's own configuration loader.
package deploy
