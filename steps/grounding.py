"""Stage 2: grounding & physical install order (manual steps, confirmed and recorded)."""

from wizard.model import Stage, Step

STAGE = Stage(
    id="grounding",
    title="Grounding & install order",
    short="Grounding",
    summary="Handle the hardware safely and in the right order; record what was installed.",
    steps=(
        Step(
            id="grounding.esd",
            title="Wear a grounded wrist strap clipped to the chassis",
            why=(
                "Electrostatic discharge damages GPUs, DIMMs and CPUs without visible marks; the "
                "fault may only appear later as ECC or link errors. Follow the ESD section of your "
                "server's service manual (a wrist strap bonded to an unpainted chassis point, the "
                "system powered off with its PSU cords removed)."
            ),
            instructions=(
                "Power the server off and unplug every PSU cord. Clip the wrist strap to bare metal on "
                "the chassis (or the bench ground point) and keep it on while you handle parts. Keep "
                "parts in their anti-static bags until they go in."
            ),
            manual=True,
        ),
        Step(
            id="grounding.install_order",
            title="Install in order: CPUs, memory in every channel, boot disk, then GPUs, NICs, power",
            why=(
                "Populating every memory channel gives the full memory bandwidth (EPYC 9004/9005 have "
                "12 DDR5 channels per socket; SUSE's EPYC 9004 tuning guide, documentation.suse.com/"
                "sbp/server-linux/html/SBP-AMD-EPYC-4-SLES15SP4/). Installing GPUs and NICs last keeps "
                "the heavy cards out of the way while you seat CPUs and DIMMs; optionally power the "
                "base system on once (before any GPU is fitted) to confirm it POSTs with all memory."
            ),
            instructions=(
                "1. CPUs and heatsinks (torque sequence per the service manual).\n"
                "2. DIMMs: one per channel on every channel first, same size and speed, in the slots "
                "the manual's population table names.\n"
                "3. Boot disk.\n"
                "4. GPUs (or the GPU baseboard), then NICs, each in the slots the vendor's GPU "
                "configuration names (GPU and NIC on the same PCIe switch/CPU where possible).\n"
                "5. GPU power cables last, with the system unplugged (see the next steps)."
            ),
            manual=True,
        ),
        Step(
            id="grounding.support",
            title="Fit the support brackets of heavy GPU cards",
            why=(
                "A card that sags or works loose in its slot can lose its PCIe link: the driver then "
                "reports the GPU as fallen off the bus (Xid 79, NVIDIA Xid catalog, "
                "docs.nvidia.com/deploy/xid-errors/). Fit the retention hardware your server's "
                "service manual specifies for that GPU."
            ),
            instructions="Fit every GPU's rear support/retention bracket named in the service manual.",
            manual=True,
        ),
        Step(
            id="grounding.power_cables",
            title="Seat every GPU power connector fully",
            why=(
                "A GPU whose auxiliary power connector is missing or half seated is not powered as "
                "designed: it may not enumerate at all, or drop off the bus under load (Xid 79, "
                "NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors/). The server's service manual "
                "names the cable for each GPU and slot."
            ),
            instructions=(
                "Check each GPU power connector clicks home and its latch is engaged; use only the "
                "cables the server vendor supplies for that GPU and slot."
            ),
            manual=True,
        ),
        Step(
            id="grounding.airflow",
            title="Check airflow direction and fill empty bays with blanking panels",
            why=(
                "Server GPUs are passively cooled by the chassis fans: the air must go front to back "
                "as the rack is designed, and open slots or bays let air bypass the GPUs. Thermal "
                "slowdown under load is the symptom (NVML clock-event reasons HW/SW thermal "
                "slowdown, docs.nvidia.com/deploy/nvml-api/); the fix is airflow, not clock locks "
                "or power caps: the nvidia-smi man page documents those as clock and power "
                "settings, not as a cooling fix."
            ),
            instructions=(
                "Match the server's airflow to the rack's hot/cold aisles; fit blanking panels in "
                "empty drive bays, PCIe slots and rack units; set the BMC fan profile the vendor "
                "recommends for GPU configurations."
            ),
            manual=True,
        ),
        Step(
            id="grounding.serials",
            title="Record the system's identity and serial numbers",
            why=(
                "Serials tie this build record to the chassis and to RMA cases. bringup reads the "
                "DMI product and serial now (SMBIOS, exposed by the kernel in /sys/class/dmi/id); GPU "
                "serials are read from nvidia-smi (else NVML, nvmlDeviceGetSerial) once the driver is up, "
                "and judged in this step."
            ),
            instructions=(
                "bringup reads DMI from /sys/class/dmi/id (the serial needs root) and, once the driver "
                "is up, each GPU's serial, which it records with the build the first time a check reads "
                "it and compares with that record whenever this step is checked again (a swapped GPU shows up). Note any serials the OS cannot see (PSUs, NICs) "
                "from their labels when you confirm (d). After an intended GPU swap (RMA), confirm "
                "this step with the RMA case in the note: the new serials become the record."
            ),
            per_machine=True,
        ),
    ),
)
