//! A status manager of a contract version this host does not serve: loading it, and so
//! swapping to it, must be refused with a typed error while the running plugin serves.

wit_bindgen::generate!({
    inline: "
        package kubelet:status@9.0.0;

        interface manager {
            get-pod-status: func(uid: string) -> option<string>;
        }

        world status-manager {
            export manager;
        }
    ",
});

struct WrongContract;

impl exports::kubelet::status::manager::Guest for WrongContract {
    fn get_pod_status(_uid: String) -> Option<String> {
        None
    }
}

export!(WrongContract);
