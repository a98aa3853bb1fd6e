// Program otelcol-agent-trace is the Collector distribution that otel-agent-trace's deploy files
// and end-to-end tests run: OTLP in; memory_limiter, redaction, tail_sampling, batch; file
// (JSON, zstd, rotation), OTLP and loadbalancing out; health_check. Laid out as the Collector
// Builder lays out main.go, so `ocb` users recognise it and `go build` alone builds it.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	envprovider "go.opentelemetry.io/collector/confmap/provider/envprovider"
	fileprovider "go.opentelemetry.io/collector/confmap/provider/fileprovider"
	yamlprovider "go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	info := component.BuildInfo{
		Command:     "otelcol-agent-trace",
		Description: "OpenTelemetry Collector for otel-agent-trace (redaction, tail sampling, file, OTLP, loadbalancing)",
		Version:     "0.161.0",
	}

	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
	}

	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}
