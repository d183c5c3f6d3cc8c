#pragma once
// What the HTTP endpoint serves of the attribution plane: its /metrics page,
// the /api/v1/workloads document, the liveness of its loop and its readiness.
#include "attribution/attribution_plane.h"
#include "export/http_server.h"

namespace gpuledger::node {

exporter::ServedContent served_content(attribution::AttributionPlane& attribution);

}  // namespace gpuledger::node
