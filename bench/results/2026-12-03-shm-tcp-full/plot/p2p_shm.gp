set terminal pngcairo noenhanced size 1400,560 font ",10"
set output '/work/main/bench/results/2026-12-03-shm-tcp-full/p2p_shm.png'
set multiplot layout 1,2 title 'point-to-point over shm, 2 ranks'
set logscale xy 2
set format x "%.0b%B"
set format y "%g"
set xlabel 'message size (bytes; Ki = 1024)'
set grid
set key left top
set title 'latency (half round trip)'; set ylabel 'µs'
plot '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.pscomm.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'pscomm', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.fi_pingpong.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'fi_pingpong', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.ompi_ofi.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'ompi_ofi', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.ompi_native.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'ompi_native', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.mpich.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'mpich', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.zmq.n2.latency_us.dat' using 1:2:3:4 with yerrorlines title 'zmq'
set title 'bandwidth (64-message window)'; set ylabel 'MB/s'
plot '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.pscomm.n2.bandwidth_MBps.dat' using 1:2:3:4 with yerrorlines title 'pscomm', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.ompi_ofi.n2.bandwidth_MBps.dat' using 1:2:3:4 with yerrorlines title 'ompi_ofi', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.ompi_native.n2.bandwidth_MBps.dat' using 1:2:3:4 with yerrorlines title 'ompi_native', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.mpich.n2.bandwidth_MBps.dat' using 1:2:3:4 with yerrorlines title 'mpich', \
     '/work/main/bench/results/2026-12-03-shm-tcp-full/plot/p2p.shm.zmq.n2.bandwidth_MBps.dat' using 1:2:3:4 with yerrorlines title 'zmq'
unset multiplot
