// The MPI transport: one rank per device (`mpirun -np D pipescope run ... --transport
// mpi`, D = K x r with replicated stages). Each rank runs its StageWorker; rank 0
// gathers every worker's records and merges them. Receives poll MPI_Test with a deadline and watch for failure notices
// (a rank that fails sends one to every other rank), so no rank waits forever.
// Built only with PIPESCOPE_WITH_MPI; otherwise run_mpi throws InputError.
#pragma once

#include "exec/runtime/executor.h"

namespace pipescope::exec {

bool mpi_available();
// True between MPI_Init and MPI_Finalize in this process.
bool mpi_active();
RunResult run_mpi(const Profile& profile, const Plan& plan, const Schedule& schedule,
                  const RunOptions& options);
// After a failed MPI run: ends every rank of the job with `code` (MPI_Abort) when MPI
// is active; returns otherwise. For main() only.
void abort_mpi_job(int code);

}  // namespace pipescope::exec
