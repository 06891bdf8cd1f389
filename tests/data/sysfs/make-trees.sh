#!/bin/bash
# Builds the fake sysfs trees (run once; the trees are committed).
set -e
cd "$1"
fn() { # dir vendor device class cur_speed cur_width max_speed max_width numa
  mkdir -p "$1"
  echo "$2" > "$1/vendor"; echo "$3" > "$1/device"; echo "$4" > "$1/class"
  echo "$5" > "$1/current_link_speed"; echo "$6" > "$1/current_link_width"
  echo "$7" > "$1/max_link_speed"; echo "$8" > "$1/max_link_width"
  echo "$9" > "$1/numa_node"
}
busl() { # tree-relative device dir -> bus/pci/devices/BDF
  mkdir -p bus/pci/devices
  ln -sfn "../../../$1" "bus/pci/devices/$(basename "$1")"
}
driver() { # dir name
  mkdir -p "bus/pci/drivers/$2"
  local depth; depth=$(echo "$1" | tr -cd / | wc -c)
  local up=""; for _ in $(seq 0 "$depth"); do up="../$up"; done
  ln -sfn "${up}bus/pci/drivers/$2" "$1/driver"
}
node() { mkdir -p "devices/system/node/node$1"; echo "$2" > "devices/system/node/node$1/cpulist"; }

rm -rf gen4x8 gen1x1 nic25g nvme4x4
# gen4x8: an H100 PCIe (Gen5 x16) behind a Gen5 x16 root port, trained at Gen4 x8, node 1.
mkdir gen4x8; (cd gen4x8
  P=devices/pci0000:40/0000:40:01.1; D=$P/0000:41:00.0
  fn $P 0x1022 0x14ab 0x060400 "16.0 GT/s PCIe" 8 "32.0 GT/s PCIe" 16 1
  fn $D 0x10de 0x2331 0x030200 "16.0 GT/s PCIe" 8 "32.0 GT/s PCIe" 16 1
  busl $P; busl $D; driver $P pcieport; driver $D nvidia
  mkdir -p dev/char/195:0; ln -sfn ../../../$D dev/char/195:0/device
  node 0 0-7; node 1 8-15)
# gen1x1: a Gen1 x1 FPGA card (Xilinx XDMA) in a Gen3 x4 slot: 250 MB/s, not a downgrade.
mkdir gen1x1; (cd gen1x1
  P=devices/pci0000:00/0000:00:1c.0; D=$P/0000:01:00.0
  fn $P 0x8086 0xa110 0x060400 "2.5 GT/s PCIe" 1 "8.0 GT/s PCIe" 4 -1
  fn $D 0x10ee 0x7011 0x058000 "2.5 GT/s PCIe" 1 "2.5 GT/s PCIe" 1 -1
  busl $P; busl $D; driver $P pcieport; driver $D xdma
  mkdir -p $D/xdma/xdma0_h2c_0; echo 240:0 > $D/xdma/xdma0_h2c_0/dev
  ln -sfn ../../../0000:01:00.0 $D/xdma/xdma0_h2c_0/device
  mkdir -p dev/char; ln -sfn ../../$D/xdma/xdma0_h2c_0 dev/char/240:0
  node 0 0-3)
# nic25g: a 25G ConnectX-4 Lx port on a Gen3 x8 link (7877 MB/s): the NIC's 3125 MB/s is the limit; a second port down (speed -1).
mkdir nic25g; (cd nic25g
  P=devices/pci0000:00/0000:00:02.0; D=$P/0000:03:00.0; D2=$P/0000:03:00.1
  fn $P 0x8086 0x2f04 0x060400 "8.0 GT/s PCIe" 8 "8.0 GT/s PCIe" 8 0
  fn $D 0x15b3 0x1015 0x020000 "8.0 GT/s PCIe" 8 "8.0 GT/s PCIe" 8 0
  fn $D2 0x15b3 0x1015 0x020000 "8.0 GT/s PCIe" 8 "8.0 GT/s PCIe" 8 0
  busl $P; busl $D; busl $D2; driver $P pcieport; driver $D mlx5_core; driver $D2 mlx5_core
  for x in "$D eth2 25000 up" "$D2 eth3 -1 down"; do set -- $x
    mkdir -p $1/net/$2; echo $3 > $1/net/$2/speed; echo $4 > $1/net/$2/operstate; echo 1 > $1/net/$2/type
    ln -sfn ../../../$(basename $1) $1/net/$2/device
    mkdir -p class/net; ln -sfn ../../$1/net/$2 class/net/$2
  done
  mkdir -p devices/virtual/net/lo; echo 1 > devices/virtual/net/lo/operstate
  ln -sfn ../../devices/virtual/net/lo class/net/lo
  node 0 0-15)
# nvme4x4: an NVMe drive on a Gen4 x4 link with one partition (block 259:0, 259:1).
mkdir nvme4x4; (cd nvme4x4
  P=devices/pci0000:00/0000:00:01.2; D=$P/0000:02:00.0
  fn $P 0x1022 0x1483 0x060400 "16.0 GT/s PCIe" 4 "16.0 GT/s PCIe" 4 0
  fn $D 0x144d 0xa80a 0x010802 "16.0 GT/s PCIe" 4 "16.0 GT/s PCIe" 4 0
  busl $P; busl $D; driver $P pcieport; driver $D nvme
  C=$D/nvme/nvme0; N=$C/nvme0n1
  mkdir -p $N/nvme0n1p1; echo 259:0 > $N/dev; echo 259:1 > $N/nvme0n1p1/dev; echo 1 > $N/nvme0n1p1/partition
  ln -sfn ../../../0000:02:00.0 $C/device; ln -sfn ../../nvme0 $N/device
  echo "Samsung SSD 980 PRO 1TB" > $C/model
  mkdir -p dev/block class/block
  ln -sfn ../../$N dev/block/259:0; ln -sfn ../../$N/nvme0n1p1 dev/block/259:1
  ln -sfn ../../$N class/block/nvme0n1; ln -sfn ../../$N/nvme0n1p1 class/block/nvme0n1p1
  node 0 0-7)
