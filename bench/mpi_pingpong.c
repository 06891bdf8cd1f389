/*
 * mpi_pingpong.c - the osu_latency-style C loop that bench/floors.sh and
 * bench/mpi-floor.sh set
 * beside `xferbench roundtrip -t mpi` (and `curve`, `mesh -t mpi`): two ranks,
 * blocking MPI_Send / MPI_Recv of BYTES each way, each round trip timed on
 * rank 0 with two clock_gettime(CLOCK_MONOTONIC) reads, as xferbench times
 * its samples. With -W, osu_bw's pattern instead: a window of MPI_Isend
 * then one 4-byte acknowledgement, bandwidth in MB/s (decimal).
 *
 * Output (rank 0), one line:
 *   mpi_pingpong rtt_ns p50=.. min=.. mean=.. iterations=.. bytes=..
 *   mpi_pingpong bw MBps=.. windows=.. window=.. bytes=..
 *
 * Build: mpicc -O2 -o mpi_pingpong mpi_pingpong.c
 * Usage: mpirun -n 2 mpi_pingpong [-b BYTES (16)] [-n ITER (200000)]
 *                                 [-w WARMUP (20000)] [-W WINDOW]
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = 16, iterations = 200000, warmup = 20000, window = 0;
    int opt;
    while ((opt = getopt(argc, argv, "b:n:w:W:")) != -1) {
        switch (opt) {
        case 'b': bytes = atol(optarg); break;
        case 'n': iterations = atol(optarg); break;
        case 'w': warmup = atol(optarg); break;
        case 'W': window = atol(optarg); break;
        default:
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -n 2 mpi_pingpong [-b BYTES] [-n ITER] [-w WARMUP] [-W WINDOW]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size != 2 || bytes < 0 || iterations <= 0 || warmup < 0 || window < 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: run two ranks, with sane counts\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long slots = window > 0 ? window : 1;
    /* Page-aligned send and receive buffers, as osu_latency allocates them:
     * Open MPI's shared-memory path moves 1 MiB at about 1.6x the rate from
     * page-aligned buffers than from malloc's (measured here), and
     * xferbench's buffers are page-aligned too. */
    size_t len = ((size_t)(bytes > 0 ? bytes : 1) * (size_t)slots + 4095) / 4096 * 4096;
    char *buf = NULL, *rbuf = NULL;
    if (posix_memalign((void **)&buf, 4096, 2 * len) != 0) {
        fprintf(stderr, "mpi_pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0x5a, 2 * len);
    rbuf = buf + len;
    int peer = 1 - rank;

    if (window > 0) {
        MPI_Request *req = malloc(sizeof *req * (size_t)window);
        int ack = 0;
        uint64_t t0 = 0;
        for (long i = 0; i < warmup + iterations; i++) {
            if (i == warmup) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = now_ns();
            }
            for (long k = 0; k < window; k++) {
                char *p = buf + k * bytes;
                if (rank == 0)
                    MPI_Isend(p, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[k]);
                else
                    MPI_Irecv(p, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[k]);
            }
            MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
            if (rank == 0)
                MPI_Recv(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
        }
        if (rank == 0) {
            double s = (double)(now_ns() - t0) / 1e9;
            printf("mpi_pingpong bw MBps=%.1f windows=%ld window=%ld bytes=%ld\n",
                   (double)bytes * (double)window * (double)iterations / s / 1e6, iterations,
                   window, bytes);
        }
        MPI_Finalize();
        return 0;
    }

    uint64_t *t = rank == 0 ? calloc((size_t)iterations, sizeof *t) : NULL;
    double sum = 0;
    for (long i = 0; i < warmup + iterations; i++) {
        if (rank == 0) {
            uint64_t a = now_ns();
            MPI_Send(buf, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            uint64_t b = now_ns();
            if (i >= warmup) {
                t[i - warmup] = b - a;
                sum += (double)(b - a);
            }
        } else {
            MPI_Recv(rbuf, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(rbuf, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        qsort(t, (size_t)iterations, sizeof *t, cmp_u64);
        printf("mpi_pingpong rtt_ns p50=%llu min=%llu mean=%.1f iterations=%ld bytes=%ld\n",
               (unsigned long long)t[iterations / 2], (unsigned long long)t[0],
               sum / (double)iterations, iterations, bytes);
    }
    MPI_Finalize();
    return 0;
}
