// Stands in for the MPI transport when the project is built without MPI.
#include "core/error.h"
#include "exec/transport/mpi_runner.h"

namespace pipescope::exec {

bool mpi_available() { return false; }
bool mpi_active() { return false; }

RunResult run_mpi(const Profile&, const Plan&, const Schedule&, const RunOptions&) {
  throw InputError("--transport mpi: this pipescope was built without MPI (PIPESCOPE_WITH_MPI=OFF or no MPI found)");
}

void abort_mpi_job(int) {}

}  // namespace pipescope::exec
