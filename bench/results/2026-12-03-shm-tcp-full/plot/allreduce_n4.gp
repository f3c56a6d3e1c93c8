set terminal pngcairo noenhanced size 1400,560 font ",10"
set output '/work/main/bench/results/2026-12-03-shm-tcp-full/allreduce_n4.png'
set multiplot layout 1,2 title 'allreduce float32 sum, 4 ranks on one host'
set logscale xy 2
set format x "%.0b%B"
set format y "%g"
set xlabel 'message size (bytes; Ki = 1024)'
set grid
set key left top
set title 'time per call'; set ylabel 'µs'
plot '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.pscomm.n4.time_us.dat' using 1:2:3:4 with yerrorlines title 'pscomm', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.ompi_native.n4.time_us.dat' using 1:2:3:4 with yerrorlines title 'ompi_native', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.mpich.n4.time_us.dat' using 1:2:3:4 with yerrorlines title 'mpich'
set title 'bus bandwidth'; set ylabel 'GB/s'
plot '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.pscomm.n4.busbw_GBps.dat' using 1:2:3:4 with yerrorlines title 'pscomm', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.ompi_native.n4.busbw_GBps.dat' using 1:2:3:4 with yerrorlines title 'ompi_native', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/allreduce.shm.mpich.n4.busbw_GBps.dat' using 1:2:3:4 with yerrorlines title 'mpich'
unset multiplot
